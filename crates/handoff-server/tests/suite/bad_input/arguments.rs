//! The tool-argument corpus: for every tool, every field × every bad value the schema rejects,
//! every required member missing, unknown members on every closed object, and arguments that
//! are not an object at all.

use jsonschema::Validator;
use serde_json::{Value, json};

use super::{
    case::{Case, Expect, Send},
    fixture::{Era, Fixture},
    generate::{Bad, Tool, call_body, candidates, deep_array, placeholder, with_raw},
    marker::Marker,
    schema::{self, Field, Seg, show},
};

/// Builds cases for one era, numbering request ids from `next_id`.
pub struct Builder<'a> {
    fx: &'a Fixture,
    marker: &'a Marker,
    era: Era,
    /// Every bad value on every field; otherwise one of each kind per field (the second era
    /// goes through the same validation, so it is sampled to keep the run short).
    thorough: bool,
    next_id: u64,
    out: Vec<Case>,
}

impl<'a> Builder<'a> {
    /// A builder for `era`; `thorough`: every bad value, not one of each kind.
    pub fn new(
        fx: &'a Fixture,
        marker: &'a Marker,
        era: Era,
        thorough: bool,
        first_id: u64,
    ) -> Self {
        Self {
            fx,
            marker,
            era,
            thorough,
            next_id: first_id,
            out: Vec::new(),
        }
    }

    /// The cases built so far.
    pub fn finish(self) -> Vec<Case> {
        self.out
    }

    fn push(&mut self, tool: &str, kind: &str, what: &str, arguments: &str, expect: Expect) {
        let id = self.next_id;
        self.next_id += 1;
        let era = self.era.name();
        self.out.push(Case {
            group: format!("{era}/args/{kind}"),
            name: format!("{era}/{tool}/{what}/{kind}#{id}"),
            send: Send::Post {
                headers: self.fx.headers(self.era, Some("tools/call"), Some(tool)),
                body: call_body(self.era, id, tool, arguments),
            },
            expect,
        });
    }

    /// Every case for one tool.
    pub fn tool(&mut self, tool: &Tool) {
        let validator = jsonschema::validator_for(&tool.input).unwrap();
        let base = schema::valid_value(&tool.input);
        assert!(
            validator.is_valid(&base),
            "{}: the generated base arguments {base} do not satisfy the schema",
            tool.name
        );
        let mut fields = Vec::new();
        schema::fields(&tool.input, &[], &mut fields);
        for (i, field) in fields.iter().enumerate() {
            self.field(tool, &validator, &base, field, i == 0);
            if field.required {
                let mut args = base.clone();
                schema::put(&mut args, &tool.input, &field.path, None);
                assert!(!validator.is_valid(&args), "{}: {args}", tool.name);
                let what = show(&field.path);
                self.push(
                    &tool.name,
                    "missing-required",
                    &what,
                    &args.to_string(),
                    Expect::tool(),
                );
            }
        }
        let closed: Vec<Vec<Seg>> = std::iter::once(Vec::new())
            .chain(
                fields
                    .iter()
                    .filter(|f| {
                        schema::object_schema(&f.schema)
                            .is_some_and(|o| o["additionalProperties"] == false)
                    })
                    .map(|f| f.path.clone()),
            )
            .collect();
        for path in &closed {
            self.unknown_member(tool, &validator, &base, path);
        }
        self.odd_keys(tool, &validator, &base);
        self.not_an_object(tool);
    }

    /// Each bad value the schema rejects, at the field's path (in the quick era, the first
    /// of each kind only).
    fn field(
        &mut self,
        tool: &Tool,
        validator: &Validator,
        base: &Value,
        field: &Field,
        first: bool,
    ) {
        let path = &field.path;
        let what = show(path);
        let mut kinds_seen = Vec::new();
        for (kind, bad) in candidates(self.marker, &field.schema, first) {
            if !self.thorough && kinds_seen.contains(&kind) {
                continue;
            }
            let mut args = base.clone();
            match bad {
                Bad::Value(value) => {
                    schema::put(&mut args, &tool.input, path, Some(value));
                    if validator.is_valid(&args) {
                        continue;
                    }
                    kinds_seen.push(kind);
                    self.push(&tool.name, kind, &what, &args.to_string(), Expect::tool());
                }
                Bad::Raw(raw) => {
                    schema::put(&mut args, &tool.input, path, Some(placeholder()));
                    let text = with_raw(&args, &raw);
                    kinds_seen.push(kind);
                    self.push(
                        &tool.name,
                        kind,
                        &what,
                        &text,
                        Expect::codes(&[-32700, -32600]),
                    );
                }
            }
        }
    }

    /// An unknown member (carrying the payload) in the closed object at `path`.
    fn unknown_member(&mut self, tool: &Tool, validator: &Validator, base: &Value, path: &[Seg]) {
        let mut at = path.to_vec();
        at.push(Seg::Key("unknown_field".into()));
        let mut args = base.clone();
        schema::put(
            &mut args,
            &tool.input,
            &at,
            Some(json!(self.marker.text(4096))),
        );
        assert!(!validator.is_valid(&args), "{}: {}", tool.name, show(&at));
        self.push(
            &tool.name,
            "unknown-field",
            &show(&at),
            &args.to_string(),
            Expect::tool(),
        );
    }

    /// Member names that are themselves the attack: the payload, empty, NUL, look-alikes.
    fn odd_keys(&mut self, tool: &Tool, validator: &Validator, base: &Value) {
        let payload = self.marker.text(4096);
        let keys = [
            payload.as_str(),
            "",
            "a\0b",
            "AGENT_ID",
            "task_id\u{200b}",
            "__proto__",
        ];
        for key in keys {
            let mut args = base.clone();
            args[key] = json!(1);
            if validator.is_valid(&args) {
                continue;
            }
            self.push(
                &tool.name,
                "unknown-field",
                "(odd key)",
                &args.to_string(),
                Expect::tool(),
            );
        }
        let huge = [
            ("huge-string", json!(self.marker.text(1 << 20))),
            ("huge-array", Value::Array(vec![json!(0); 100_000])),
        ];
        for (kind, value) in huge {
            let mut args = base.clone();
            args["unknown_field"] = value;
            self.push(
                &tool.name,
                kind,
                "unknown_field",
                &args.to_string(),
                Expect::tool(),
            );
        }
    }

    /// Arguments that are not an object: the refusal names `arguments`.
    fn not_an_object(&mut self, tool: &Tool) {
        let payload = json!(self.marker.text(4096)).to_string();
        for args in ["[]", "[1,2]", &payload, "5", "true"] {
            let expect = Expect::tool().naming("arguments");
            self.push(&tool.name, "not-an-object", "(arguments)", args, expect);
        }
        let deep = deep_array(10_000);
        self.push(
            &tool.name,
            "deep-nesting",
            "(arguments)",
            &deep,
            Expect::codes(&[-32700, -32600]),
        );
    }
}
