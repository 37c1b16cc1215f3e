//! cleanroom-agent
