//! Tests of a text column's values that a chunk can answer on its codes, without the values:
//! equality with a literal, a literal prefix (`LIKE 'prefix%'`), and either of several. A
//! dictionary answers once per distinct value; a templated column once per template, wherever
//! the template's literal text settles the answer for every value made from it (see
//! [`TextTest::on_template`]), and row by row only where the answer depends on the variables.

use crate::codec::template::HOLE;

/// A test of one text value, as read (escapes undone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TextTest {
    /// The value is exactly these bytes.
    Equals(Vec<u8>),
    /// The value starts with these bytes.
    StartsWith(Vec<u8>),
    /// Any of these passes (none: nothing passes).
    AnyOf(Vec<TextTest>),
}

impl TextTest {
    /// Whether `value` passes.
    pub fn passes(&self, value: &[u8]) -> bool {
        match self {
            TextTest::Equals(w) => value == w.as_slice(),
            TextTest::StartsWith(p) => value.starts_with(p),
            TextTest::AnyOf(tests) => tests.iter().any(|t| t.passes(value)),
        }
    }

    /// The answer for every value made from `template` (its literal text with each
    /// `HOLE` filled by a variable), or `None` where it depends on the variables. Only the
    /// literal text is relied on, not how the writer split values into templates, so the
    /// answer holds for any template a chunk stores.
    pub fn on_template(&self, template: &[u8]) -> Option<bool> {
        let mut literals = template.split(|&b| b == HOLE);
        let head = literals.next().unwrap_or_default();
        if head.len() == template.len() {
            // No holes: the template is the value.
            return Some(self.passes(template));
        }
        match self {
            TextTest::StartsWith(p) if head.len() >= p.len() => Some(head.starts_with(p)),
            TextTest::StartsWith(p) => (!p.starts_with(head)).then_some(false),
            TextTest::Equals(w) => {
                // The value begins with the first literal and ends with the last, and holds
                // every literal between them, in order, in between.
                let tail = literals.next_back().unwrap_or_default();
                let fits = w.len() >= head.len() + tail.len()
                    && w.starts_with(head)
                    && w.ends_with(tail)
                    && in_order(&w[head.len()..w.len() - tail.len()], literals);
                (!fits).then_some(false)
            }
            TextTest::AnyOf(tests) => {
                let mut answer = Some(false);
                for t in tests {
                    match t.on_template(template) {
                        Some(true) => return Some(true),
                        Some(false) => {}
                        None => answer = None,
                    }
                }
                answer
            }
        }
    }
}

/// Whether each of `parts` occurs in `s`, one after another without overlapping.
fn in_order<'a>(mut s: &[u8], parts: impl Iterator<Item = &'a [u8]>) -> bool {
    for part in parts {
        if part.is_empty() {
            continue;
        }
        match s.windows(part.len()).position(|w| w == part) {
            Some(i) => s = &s[i + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::template::split;
    use proptest::prelude::*;

    fn template_of(v: &[u8]) -> Vec<u8> {
        let (mut t, mut vars) = (Vec::new(), Vec::new());
        split(v, &mut t, &mut vars);
        t
    }

    #[test]
    fn templates_settle_what_their_literal_text_settles() {
        let t = template_of(b"Accepted password for root from 10.0.0.1 port 22 ssh2");
        assert_eq!(t.iter().filter(|&&b| b == HOLE).count(), 3);
        let prefix = |p: &str| TextTest::StartsWith(p.as_bytes().to_vec());
        let equals = |w: &str| TextTest::Equals(w.as_bytes().to_vec());
        assert_eq!(prefix("Accepted pass").on_template(&t), Some(true));
        assert_eq!(prefix("Failed").on_template(&t), Some(false));
        // Past the first hole: the variable decides.
        assert_eq!(
            prefix("Accepted password for root from 10.").on_template(&t),
            None
        );
        assert_eq!(
            prefix("Accepted password for root from x").on_template(&t),
            None
        );
        assert_eq!(
            equals("Accepted password for root from 10.0.0.2 port 2222 ssh2").on_template(&t),
            None
        );
        assert_eq!(
            equals("Accepted password for admin from 1 port 2 ssh2").on_template(&t),
            Some(false)
        );
        assert_eq!(equals("Accepted").on_template(&t), Some(false));
        let either = TextTest::AnyOf(vec![equals("Accepted"), prefix("Acc")]);
        assert_eq!(either.on_template(&t), Some(true));
        assert_eq!(TextTest::AnyOf(vec![]).on_template(&t), Some(false));
        // A template without holes is its one value.
        assert_eq!(
            equals("session closed").on_template(b"session closed"),
            Some(true)
        );
        assert_eq!(prefix("session").on_template(b"session closed"), Some(true));
        assert_eq!(
            equals("session").on_template(b"session closed"),
            Some(false)
        );
    }

    fn value() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(prop::sample::select(b"ab1 :.x9-".to_vec()), 0..16)
    }

    fn test() -> impl Strategy<Value = TextTest> {
        let leaf = prop_oneof![
            value().prop_map(TextTest::Equals),
            value().prop_map(TextTest::StartsWith),
        ];
        prop_oneof![
            leaf.clone(),
            proptest::collection::vec(leaf, 0..3).prop_map(TextTest::AnyOf),
        ]
    }

    proptest! {
        /// Wherever a template's answer is settled, every value made from it gets that answer;
        /// tests are often made from the values themselves, so that they pass now and then.
        #[test]
        fn settled_answers_hold_for_every_value_of_the_template(
            values in proptest::collection::vec(value(), 1..6),
            test in test(),
            cut in 0usize..16,
        ) {
            let own = [
                TextTest::Equals(values[0].clone()),
                TextTest::StartsWith(values[0][..cut.min(values[0].len())].to_vec()),
            ];
            for test in own.iter().chain([&test]) {
                for v in &values {
                    if let Some(answer) = test.on_template(&template_of(v)) {
                        prop_assert_eq!(answer, test.passes(v), "{:?} on {:?}", test, v);
                    }
                }
            }
        }
    }
}
