//! The run page's trial filters, from its query string: by task, agent,
//! domain, outcome, failure class and tag. An empty field matches all.

use serde::Deserialize;

use cleanroom_report::tables::outcome_text;
use cleanroom_store::{TaskInfo, TrialRecord};

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Filter {
    pub task: Option<String>,
    pub agent: Option<String>,
    pub domain: Option<String>,
    pub outcome: Option<String>,
    pub class: Option<String>,
    pub tag: Option<String>,
}

fn wanted(field: &Option<String>) -> Option<&str> {
    field.as_deref().filter(|v| !v.is_empty())
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.fields().iter().all(|(_, v)| v.is_none())
    }

    /// The fields with what each asks for.
    pub fn fields(&self) -> [(&'static str, Option<&str>); 6] {
        [
            ("task", wanted(&self.task)),
            ("agent", wanted(&self.agent)),
            ("domain", wanted(&self.domain)),
            ("outcome", wanted(&self.outcome)),
            ("class", wanted(&self.class)),
            ("tag", wanted(&self.tag)),
        ]
    }

    pub fn matches(&self, r: &TrialRecord, task: Option<&TaskInfo>) -> bool {
        let class = r.class.map(|c| c.as_str());
        self.fields().iter().all(|(field, want)| {
            let Some(want) = want else { return true };
            match *field {
                "task" => r.task == *want,
                "agent" => r.agent_id == *want,
                "domain" => task.is_some_and(|t| t.domain == *want),
                "outcome" => r.outcome.as_str() == *want || outcome_text(r) == *want,
                "class" => class == Some(*want),
                "tag" => r.tags.iter().any(|t| t.name == *want),
                _ => true,
            }
        })
    }
}
