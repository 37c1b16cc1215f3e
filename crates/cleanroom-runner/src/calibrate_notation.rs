//! How `tasks calibrate` writes a number: in the notation the author wrote
//! the value it replaces in (`1e-9` stays in exponent form, `0.5` in
//! decimals, `3` an integer while the new value is whole), and a new key in
//! that of the check's `expect`, so a calibrated checks.toml reads as its
//! author wrote it.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notation {
    /// `1e-9`; `upper` for `1E-9`.
    Exponent {
        upper: bool,
    },
    Decimal,
    Integer,
}

impl Notation {
    /// The notation of a TOML number as written.
    pub fn of(raw: &str) -> Notation {
        let raw = raw.trim().trim_start_matches(['+', '-']);
        if raw.starts_with("0x") || raw.starts_with("0o") || raw.starts_with("0b") {
            // The `E` of a hexadecimal integer is a digit.
            Notation::Integer
        } else if raw.contains('E') {
            Notation::Exponent { upper: true }
        } else if raw.contains('e') {
            Notation::Exponent { upper: false }
        } else if raw.contains('.') || raw == "inf" || raw == "nan" {
            Notation::Decimal
        } else {
            Notation::Integer
        }
    }

    /// The notation of a new key holding `x`: exponent form where the
    /// check's `expect` is written in it (`expect`), or where decimals
    /// would be long; decimals otherwise.
    pub fn for_new(x: f64, expect: Option<Notation>) -> Notation {
        match expect {
            Some(exponent @ Notation::Exponent { .. }) => exponent,
            _ if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e6) => Notation::Exponent { upper: false },
            _ => Notation::Decimal,
        }
    }

    /// `x` as TOML in this notation: the shortest digits that read back as
    /// `x`, so what is shown is what is written and what is compared.
    pub fn write(self, x: f64) -> String {
        // Whole numbers below 2^53 are exact as integers.
        const EXACT: f64 = 9007199254740992.0;
        match self {
            Notation::Exponent { upper: true } => format!("{x:E}"),
            Notation::Exponent { upper: false } => format!("{x:e}"),
            Notation::Integer if x.fract() == 0.0 && x.abs() < EXACT => format!("{}", x as i64),
            Notation::Integer | Notation::Decimal => {
                let s = format!("{x}");
                // TOML reads a number without a point as an integer.
                if s.contains('.') {
                    s
                } else {
                    format!("{s}.0")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authors_notation_is_kept() {
        let exp = Notation::of("1e-9");
        assert_eq!(exp, Notation::Exponent { upper: false });
        assert_eq!(exp.write(1e-6), "1e-6");
        assert_eq!(exp.write(0.000153), "1.53e-4");
        assert_eq!(Notation::of("2.5E3").write(1240.0), "1.24E3");
        let decimal = Notation::of("0.6");
        assert_eq!(decimal.write(1e-6), "0.000001");
        assert_eq!(decimal.write(3.0), "3.0");
        let integer = Notation::of("10");
        assert_eq!(integer.write(11.0), "11");
        assert_eq!(integer.write(10.5), "10.5");
        assert_eq!(Notation::of("-3").write(-4.0), "-4");
        assert_eq!(Notation::of("0xE0"), Notation::Integer);
    }

    #[test]
    fn a_new_key_follows_the_expected_value_or_its_magnitude() {
        let exp = Some(Notation::Exponent { upper: false });
        assert_eq!(Notation::for_new(0.5, exp).write(0.5), "5e-1");
        assert_eq!(Notation::for_new(1e-6, Some(Notation::Decimal)).write(1e-6), "1e-6");
        assert_eq!(Notation::for_new(0.0153, Some(Notation::Decimal)).write(0.0153), "0.0153");
        assert_eq!(Notation::for_new(2.0, None).write(2.0), "2.0");
    }

    #[test]
    fn what_is_written_reads_back_as_the_number() {
        for x in [1e-6, 0.000153, 2.0001234, 1e-10, 1240.0, 123456789.0, -3.5e-12] {
            for n in [Notation::Exponent { upper: false }, Notation::Decimal, Notation::Integer] {
                let written = n.write(x);
                let back: toml::Value = toml::from_str(&format!("x = {written}")).unwrap();
                let back = back["x"].as_float().or_else(|| back["x"].as_integer().map(|i| i as f64));
                assert_eq!(back, Some(x), "{written}");
            }
        }
    }
}
