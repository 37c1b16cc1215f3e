//! A loaded task's metadata as runs record it in run.toml and reports
//! slice by.

use cleanroom_store::TaskInfo;
use cleanroom_task::Task;

pub fn task_info(t: &Task) -> TaskInfo {
    let m = &t.spec.task;
    TaskInfo {
        title: m.title.clone(),
        domain: m.domain.as_str().to_string(),
        difficulty: m.difficulty.as_str().to_string(),
        languages: m.languages.clone(),
        legacy: m.legacy,
        gpu: m.gpu,
        qemu: m.qemu,
        year: t.spec.paper.year,
        tags: m.tags.clone(),
    }
}
