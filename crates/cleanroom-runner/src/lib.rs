//! cleanroom-runner
