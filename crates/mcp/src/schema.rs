//! The tools' output schemas: each result type's JSON Schema, from the same derives as
//! the HTTP API's OpenAPI document (`utoipa`), made self-contained for MCP: the schemas it
//! refers to go into `$defs`, and its refs point there. The root is an object, as MCP
//! requires of an `outputSchema`: the result, or (`anyOf`) the refusal envelope every
//! error result carries, `{"error": {code, message}}`, since some clients check a
//! tool's structured content against its schema on errors too.

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::Value;
use utoipa::{PartialSchema, ToSchema};

/// Where OpenAPI keeps the schemas a schema refers to.
const COMPONENTS: &str = "#/components/schemas/";

/// Where a self-contained JSON Schema keeps them.
const DEFS: &str = "#/$defs/";

/// The output schema of a tool answering with `T`.
pub fn of<T: ToSchema>() -> Arc<JsonObject> {
    let mut refs = Vec::new();
    T::schemas(&mut refs);
    airlock_app::ErrorBody::schemas(&mut refs);
    refs.push((
        airlock_app::ErrorBody::name().into_owned(),
        airlock_app::ErrorBody::schema(),
    ));
    let mut defs = serde_json::Map::new();
    for (name, schema) in refs {
        defs.insert(
            name,
            serde_json::to_value(schema).expect("a schema serializes"),
        );
    }
    let mut result = serde_json::to_value(T::schema()).expect("a schema serializes");
    let refusal =
        serde_json::json!({"$ref": format!("{COMPONENTS}{}", airlock_app::ErrorBody::name())});
    let mut root = serde_json::json!({
        "type": "object",
        "anyOf": [result.take(), refusal],
        "$defs": defs,
    });
    point_refs_at_defs(&mut root);
    match root {
        Value::Object(object) => Arc::new(object),
        _ => unreachable!("built as an object"),
    }
}

/// Rewrites every `$ref` to `#/components/schemas/X` as `#/$defs/X`.
fn point_refs_at_defs(value: &mut Value) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object.iter_mut() {
                match inner {
                    Value::String(target) if key == "$ref" => {
                        if let Some(name) = target.strip_prefix(COMPONENTS) {
                            *target = format!("{DEFS}{name}");
                        }
                    }
                    _ => point_refs_at_defs(inner),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(point_refs_at_defs),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every ref points into the schema's own `$defs`, and every one it names is there.
    fn refs_resolve(schema: &JsonObject) {
        fn walk(value: &Value, found: &mut Vec<String>) {
            match value {
                Value::Object(object) => {
                    for (key, inner) in object {
                        match inner {
                            Value::String(target) if key == "$ref" => found.push(target.clone()),
                            _ => walk(inner, found),
                        }
                    }
                }
                Value::Array(items) => items.iter().for_each(|i| walk(i, found)),
                _ => {}
            }
        }
        let mut found = Vec::new();
        walk(&Value::Object(schema.clone()), &mut found);
        let defs = schema.get("$defs").and_then(Value::as_object);
        for target in found {
            let name = target
                .strip_prefix(DEFS)
                .unwrap_or_else(|| panic!("{target} is not a local ref"));
            assert!(
                defs.is_some_and(|d| d.contains_key(name)),
                "{target} is missing from $defs"
            );
        }
    }

    #[test]
    fn a_result_schema_is_a_self_contained_object() {
        let post = of::<airlock_core::PostDetail>();
        assert_eq!(post.get("type"), Some(&Value::String("object".into())));
        refs_resolve(&post);
        let packet = of::<airlock_app::critic::ReviewPacket>();
        refs_resolve(&packet);
        assert!(
            packet["$defs"].get("Post").is_some(),
            "{:?}",
            packet["$defs"]
        );
    }
}
