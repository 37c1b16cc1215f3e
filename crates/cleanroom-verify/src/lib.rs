//! cleanroom-verify
