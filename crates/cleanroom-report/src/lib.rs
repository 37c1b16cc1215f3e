//! cleanroom-report
