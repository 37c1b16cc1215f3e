use cleanroom_model::http::Response;

use crate::fetch::{failure, Fetcher};

pub fn answer(_fetcher: &Fetcher, _rest: &str) -> Response {
    failure(404, "crates: not yet")
}
