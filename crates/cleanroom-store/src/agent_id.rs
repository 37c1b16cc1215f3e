//! Agent ids: the file-name-safe slug of each agent SPEC, which names the
//! agent's directories under `trials/<task>/`.

use std::collections::HashSet;

use cleanroom_model::GateMode;

/// Longest slug kept before a collision suffix, so paths stay short.
const MAX_LEN: usize = 48;

/// One id per SPEC, in order: lowercase `[a-z0-9-]`, unique within the run
/// (`-2`, `-3`, ... on a collision).
///
/// `oracle` -> `oracle`, `llm:gpt-4o` -> `llm-gpt-4o`, and for `script:PATH`
/// the kind and the script's file name: `script:/path/to/agent.sh` ->
/// `script-agent-sh` (the directories above it say nothing of the agent).
pub fn agent_ids(specs: &[String]) -> Vec<String> {
    let mut taken = HashSet::new();
    specs
        .iter()
        .map(|spec| {
            let base = slug_of_spec(spec);
            let id = (1..)
                .map(|k| if k == 1 { base.clone() } else { format!("{base}-{k}") })
                .find(|id| !taken.contains(id))
                .expect("some suffix is free");
            taken.insert(id.clone());
            id
        })
        .collect()
}

/// The id of agent `id` under `gate`, in a run of several gates:
/// `llm-local` -> `llm-local-gate-enforced`. Ids unique within the run stay
/// so: no two gates' suffixes end alike.
pub fn gated_id(id: &str, gate: GateMode) -> String {
    format!("{id}-gate-{}", gate.as_str())
}

fn slug_of_spec(spec: &str) -> String {
    let text = match spec.split_once(':') {
        Some(("script", path)) => {
            let file = path.trim_end_matches('/').rsplit('/').next().unwrap_or(path);
            format!("script-{file}")
        }
        Some((kind, rest)) => format!("{kind}-{rest}"),
        None => spec.to_string(),
    };
    let slug = slugify(&text);
    if slug.is_empty() {
        "agent".to_string()
    } else {
        slug
    }
}

/// Lowercase ASCII letters and digits; every run of anything else becomes
/// one `-`, none at either end.
fn slugify(text: &str) -> String {
    let mut slug = String::new();
    for c in text.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.truncate(MAX_LEN);
    slug.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(specs: &[&str]) -> Vec<String> {
        agent_ids(&specs.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn slugs_of_each_kind() {
        assert_eq!(
            ids(&[
                "oracle",
                "nop",
                "script:/path/to/agent.sh",
                "llm:gpt-4o",
                "command:claude-code",
                "llm:meta-llama/Llama-3.1-8B",
            ]),
            [
                "oracle",
                "nop",
                "script-agent-sh",
                "llm-gpt-4o",
                "command-claude-code",
                "llm-meta-llama-llama-3-1-8b"
            ]
        );
    }

    #[test]
    fn only_safe_characters_and_collapsed_dashes() {
        assert_eq!(ids(&["script:./My  Agent!!.SH"]), ["script-my-agent-sh"]);
        assert_eq!(ids(&["llm:--Ünïcode__model--"]), ["llm-n-code-model"]);
        assert_eq!(ids(&["script:/tmp/../../x/"]), ["script-x"]);
        assert_eq!(ids(&[":::"]), ["agent"]);
        assert_eq!(ids(&[""]), ["agent"]);
        let long = format!("llm:{}", "a".repeat(200));
        assert_eq!(ids(&[&long])[0].len(), MAX_LEN);
    }

    #[test]
    fn collisions_get_numbered() {
        assert_eq!(
            ids(&["script:/a/agent.sh", "script:/b/agent.sh", "script:/c/agent.sh", "oracle"]),
            ["script-agent-sh", "script-agent-sh-2", "script-agent-sh-3", "oracle"]
        );
        // A SPEC whose own slug is a numbered one still gets a fresh id.
        assert_eq!(ids(&["nop", "nop", "nop-2"]), ["nop", "nop-2", "nop-2-2"]);
    }
}
