//! cleanroom-store
