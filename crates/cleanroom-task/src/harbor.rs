//! Keys of Harbor's task format (the Terminal-Bench successor), which task
//! authors often bring along: each gets a message that names its cleanroom
//! equivalent instead of a bare "unknown key".

const PREFIX: &str = "belongs to Harbor's task format, not cleanroom's;";

/// A hint for a key of task.toml, by its dotted name (`environment.allow_internet`).
pub(crate) fn task_toml_hint(full_key: &str) -> Option<String> {
    let equivalent = match full_key {
        "version" => "cleanroom's is the integer `schema_version = 1`",
        "metadata" => "cleanroom keeps difficulty, tags and the domain in [task] and the paper in [paper]",
        "verifier" => "cleanroom's hidden pipeline is verify/checks.toml ([[step]] and [[check]]), its time budget `timeout_sec` in [verify]",
        "solution" => "cleanroom's oracle runs solution/setup.sh, its time budget `timeout_sec` in [oracle]",
        "source" => "the artifact's source is `source` in [artifact]",
        "environment.allow_internet" => "cleanroom's equivalent is environment.network",
        "environment.storage_mb" | "environment.storage" => {
            "cleanroom's equivalent is environment.disk_mb (an integer in MiB)"
        }
        "environment.memory" => "cleanroom's equivalent is environment.memory_mb (an integer in MiB)",
        "environment.docker_image" => {
            "cleanroom's environment.image names a bare OS image that the backend provides, and the artifact comes from [artifact]"
        }
        "environment.build_timeout_sec" => {
            "cleanroom starts from a prebuilt base image (`cleanroom image build`); installing counts against agent.timeout_sec"
        }
        "environment.gpu_types" => "cleanroom has environment.gpus (a count) and task.gpu",
        "environment.os" => "cleanroom's environment.image names the operating system image",
        "environment.env" | "verifier.env" | "solution.env" => {
            "cleanroom steps get a clean environment; set variables in the step's `run`"
        }
        "agent.user" => "the agent works as root in a fresh environment",
        "agent.setup_timeout_sec" => "cleanroom has one budget for the agent, agent.timeout_sec",
        "task.name" => "cleanroom's equivalent is task.id, which defaults to the directory name",
        "task.description" => "cleanroom has task.title, and the instruction in instruction.md",
        "task.keywords" => "cleanroom's equivalent is task.tags",
        "task.authors" => "cleanroom records the paper in [paper] and has no author keys",
        _ => return None,
    };
    Some(format!("{PREFIX} {equivalent}"))
}

/// A hint for a string `schema_version` such as Harbor's `"1.3"`.
pub(crate) fn string_schema_version_hint() -> String {
    format!("a string version {PREFIX} cleanroom's is the integer `schema_version = 1`")
}

/// A hint for a task directory laid out for Harbor (tests/test.sh,
/// environment/Dockerfile, solution/solve.sh) that lacks verify/checks.toml.
pub(crate) fn layout_hint(dir: &std::path::Path) -> Option<String> {
    let harbor_files = ["tests/test.sh", "environment/Dockerfile", "solution/solve.sh"];
    let found: Vec<&str> = harbor_files.into_iter().filter(|f| dir.join(f).exists()).collect();
    if found.is_empty() {
        return None;
    }
    Some(format!(
        "{} {PREFIX} cleanroom's hidden verifier is verify/checks.toml, its oracle solution/setup.sh",
        found.join(" and ")
    ))
}
