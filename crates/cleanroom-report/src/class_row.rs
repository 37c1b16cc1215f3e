//! The rows of failure-class counts: every class, then `unclassified` for a
//! failure recorded without one, so that the counts add up to the failures.

use serde::{Serialize, Serializer};

use cleanroom_store::FailureClass;

/// Ordered as reports list the rows: the classes in their declared order,
/// then `Unclassified`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ClassRow {
    Class(FailureClass),
    Unclassified,
}

impl ClassRow {
    pub fn of(class: Option<FailureClass>) -> ClassRow {
        class.map_or(ClassRow::Unclassified, ClassRow::Class)
    }

    /// Every row, in report order.
    pub fn all() -> impl Iterator<Item = ClassRow> {
        FailureClass::ALL.into_iter().map(ClassRow::Class).chain([ClassRow::Unclassified])
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ClassRow::Class(class) => class.as_str(),
            ClassRow::Unclassified => "unclassified",
        }
    }
}

/// As its name, so that counts keyed by row serialize as result.json
/// spells the classes.
impl Serialize for ClassRow {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_then_unclassified_in_order() {
        let rows: Vec<ClassRow> = ClassRow::all().collect();
        assert_eq!(rows.len(), FailureClass::ALL.len() + 1);
        assert!(rows.windows(2).all(|w| w[0] < w[1]), "{rows:?}");
        assert_eq!(rows.last(), Some(&ClassRow::Unclassified));
        for class in FailureClass::ALL {
            assert_eq!(serde_json::to_value(ClassRow::of(Some(class))).unwrap(), class.as_str());
        }
        assert_eq!(serde_json::to_value(ClassRow::of(None)).unwrap(), "unclassified");
    }
}
