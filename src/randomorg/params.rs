//! A RANDOM.ORG method's parameters as its JSON-RPC request names them (Release 4): read by
//! name from the request's `params` object, `null` read as absent (the official clients send
//! every optional parameter, `null` when unset), a name the method does not take refused.
//! Each reader answers RANDOM.ORG's code for what is wrong: −32602 for a required parameter
//! missing or a name not taken, 200 for a value of the wrong type, 202 for a number out of its
//! range.

use serde_json::{Map, Value};

use super::error::RpcError;

/// A request's `params`, for a method that takes the parameters `allowed`.
#[derive(Debug, Clone, Copy)]
pub struct Params<'a> {
    map: &'a Map<String, Value>,
}

/// No parameters at all (a request without `params`).
static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

impl<'a> Params<'a> {
    /// `params` (an object, or absent) of a method taking `allowed`.
    ///
    /// # Errors
    /// −32600 for `params` that is no object; −32602 naming a parameter not in `allowed`.
    pub fn of(params: Option<&'a Value>, allowed: &[&str]) -> Result<Params<'a>, RpcError> {
        let map = match params {
            None | Some(Value::Null) => &*EMPTY,
            Some(Value::Object(map)) => map,
            Some(_) => return Err(RpcError::invalid_request("params must be an object")),
        };
        if let Some(name) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(RpcError::invalid_params(name));
        }
        Ok(Params { map })
    }

    /// `name`'s value; `null` is absent.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    /// Every parameter given (not `null`), by name.
    pub fn pairs(&self) -> impl Iterator<Item = (&'a str, &'a Value)> + use<'a> {
        self.map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.as_str(), v))
    }

    /// `name`'s value, required.
    ///
    /// # Errors
    /// −32602 when absent.
    pub fn required(&self, name: &str) -> Result<&'a Value, RpcError> {
        self.get(name).ok_or_else(|| RpcError::invalid_params(name))
    }

    /// A required integer in `[low, high]`.
    ///
    /// # Errors
    /// −32602, 200, 202.
    pub fn int(&self, name: &str, low: i64, high: i64) -> Result<i64, RpcError> {
        int_in(self.required(name)?, name, low, high)
    }

    /// An optional boolean, `default` when absent.
    ///
    /// # Errors
    /// 200.
    pub fn boolean(&self, name: &str, default: bool) -> Result<bool, RpcError> {
        self.get(name).map_or(Ok(default), |v| boolean(v, name))
    }

    /// A required string.
    ///
    /// # Errors
    /// −32602, 200.
    pub fn string(&self, name: &str) -> Result<&'a str, RpcError> {
        self.required(name)?.as_str().ok_or_else(|| RpcError::malformed(name))
    }

    /// A required number (integer or not) in `[low, high]`.
    ///
    /// # Errors
    /// −32602, 200, 202.
    pub fn number(&self, name: &str, low: f64, high: f64) -> Result<f64, RpcError> {
        let value = self.required(name)?.as_f64().ok_or_else(|| RpcError::malformed(name))?;
        match (low..=high).contains(&value) {
            true => Ok(value),
            false => Err(RpcError::out_of_range(name, low, high)),
        }
    }
}

/// `value` as an integer in `[low, high]`.
///
/// # Errors
/// 200 for anything but a JSON integer; 202 outside the range.
pub fn int_in(value: &Value, name: &str, low: i64, high: i64) -> Result<i64, RpcError> {
    let out_of_range = || RpcError::out_of_range(name, low as f64, high as f64);
    match value {
        Value::Number(n) if n.is_i64() || n.is_u64() => {
            let v = n.as_i64().ok_or_else(out_of_range)?;
            if (low..=high).contains(&v) { Ok(v) } else { Err(out_of_range()) }
        }
        _ => Err(RpcError::malformed(name)),
    }
}

/// `value` as a boolean.
///
/// # Errors
/// 200.
pub fn boolean(value: &Value, name: &str) -> Result<bool, RpcError> {
    value.as_bool().ok_or_else(|| RpcError::malformed(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_is_absent_and_unknown_names_are_refused() {
        let params = json!({"n": 3, "base": null, "min": 1.5, "flag": "yes"});
        let p = Params::of(Some(&params), &["n", "base", "min", "flag"]).unwrap();
        assert_eq!(p.get("base"), None);
        assert_eq!(p.int("n", 1, 10).unwrap(), 3);
        assert_eq!(p.int("n", 4, 10).unwrap_err().code, 202);
        assert_eq!(p.int("base", 1, 10).unwrap_err().code, -32602, "null is absent, and n is required");
        assert_eq!(p.int("min", 0, 10).unwrap_err().code, 200, "1.5 is no integer");
        assert_eq!(p.boolean("flag", true).unwrap_err().code, 200);
        assert!(p.boolean("base", true).unwrap());
        let e = Params::of(Some(&params), &["n"]).unwrap_err();
        assert_eq!((e.code, e.data.clone()), (-32602, json!(["base"])));
        assert_eq!(Params::of(Some(&json!([1])), &[]).unwrap_err().code, -32600);
        assert!(Params::of(None, &[]).unwrap().get("n").is_none());
        let big = json!({"n": 18446744073709551615u64});
        assert_eq!(Params::of(Some(&big), &["n"]).unwrap().int("n", 1, 10).unwrap_err().code, 202);
    }
}
