//! The segments of the HTML report's outcome charts: a trial's outcome,
//! with failures split by class. Built from the outcome and class enums,
//! so that a new outcome or class gets a segment (and, through `color`'s
//! match, a colour) or the crate does not compile.

use cleanroom_store::{FailureClass, Outcome, TrialRecord};

use crate::class_row::ClassRow;
use crate::model::ArmCounts;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    Passed,
    Failed(ClassRow),
    InfraError,
    Skipped,
}

impl Segment {
    /// Every segment, in chart order: the outcomes in theirs, `failed` as
    /// its class rows.
    pub fn all() -> Vec<Segment> {
        Outcome::ALL
            .into_iter()
            .flat_map(|outcome| match outcome {
                Outcome::Passed => vec![Segment::Passed],
                Outcome::Failed => ClassRow::all().map(Segment::Failed).collect(),
                Outcome::InfraError => vec![Segment::InfraError],
                Outcome::Skipped => vec![Segment::Skipped],
            })
            .collect()
    }

    pub fn of(r: &TrialRecord) -> Segment {
        match r.outcome {
            Outcome::Passed => Segment::Passed,
            Outcome::Failed => Segment::Failed(ClassRow::of(r.class)),
            Outcome::InfraError => Segment::InfraError,
            Outcome::Skipped => Segment::Skipped,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Segment::Passed => Outcome::Passed.as_str(),
            Segment::Failed(row) => row.as_str(),
            Segment::InfraError => Outcome::InfraError.as_str(),
            Segment::Skipped => Outcome::Skipped.as_str(),
        }
    }

    /// Okabe–Ito colours (told apart with colour blindness) for the judged
    /// trials, greys for those outside the rate.
    pub fn color(self) -> &'static str {
        match self {
            Segment::Passed => "#009E73",
            Segment::Failed(ClassRow::Class(class)) => match class {
                FailureClass::SelfStop => "#E69F00",
                FailureClass::Budget => "#56B4E9",
                FailureClass::AgentError => "#D55E00",
                FailureClass::Tampered => "#CC79A7",
            },
            Segment::Failed(ClassRow::Unclassified) => "#8c6d31",
            Segment::InfraError => "#9e9e9e",
            Segment::Skipped => "#d0d0d0",
        }
    }

    /// Its name and colour, as the charts' legends take them.
    pub fn legend(self) -> (&'static str, &'static str) {
        (self.name(), self.color())
    }

    /// An arm's trials in this segment.
    pub fn count(self, c: &ArmCounts) -> u64 {
        match self {
            Segment::Passed => c.passed,
            Segment::Failed(row) => c.failed_by_class[&row],
            Segment::InfraError => c.infra_error,
            Segment::Skipped => c.skipped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_and_class_has_a_segment_of_its_own_colour() {
        let all = Segment::all();
        let names: Vec<&str> = all.iter().map(|s| s.name()).collect();
        for o in Outcome::ALL.into_iter().filter(|&o| o != Outcome::Failed) {
            assert!(names.contains(&o.as_str()), "{names:?}");
        }
        for row in ClassRow::all() {
            assert!(names.contains(&row.as_str()), "{names:?}");
        }
        let mut colors: Vec<&str> = all.iter().map(|s| s.color()).collect();
        colors.sort();
        colors.dedup();
        assert_eq!(colors.len(), all.len(), "one colour per segment");
    }
}
