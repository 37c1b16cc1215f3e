//! cleanroom-task
