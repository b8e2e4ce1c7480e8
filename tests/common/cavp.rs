//! A reader of NIST CAVP `.rsp` files (the DRBG known-answer vectors): group headers
//! (`[AES-256 use df]`), records starting at `COUNT = n`, fields `Name = hex`. Shared by the
//! known-answer tests and the CAVP fuzz target (`fuzz/fuzz_targets/cavp.rs`): a malformed file
//! is an error naming its line, never a panic.

/// One CAVP record: the group header and the record's fields in file order.
pub struct Record {
    pub header: String,
    pub fields: Vec<(String, Vec<u8>)>,
}

impl Record {
    /// Every value of the field `name`, in file order.
    pub fn all(&self, name: &str) -> Vec<&[u8]> {
        self.fields.iter().filter(|(n, _)| n == name).map(|(_, v)| v.as_slice()).collect()
    }

    /// The first value of the field `name`.
    ///
    /// # Panics
    /// If the record has no such field (a vector file this reader was not written for).
    pub fn one(&self, name: &str) -> &[u8] {
        self.all(name)[0]
    }
}

/// The records of a `.rsp` file's text.
///
/// # Errors
/// A line that is no `Name = hex` field, a field before the first `COUNT`, or a value that is
/// not hex, with its line number.
pub fn parse(text: &str) -> Result<Vec<Record>, String> {
    let mut header = String::new();
    let mut records = Vec::new();
    let mut current: Option<Record> = None;
    for (number, line) in text.lines().map(str::trim_end).enumerate() {
        let at = |what: &str| format!("line {}: {what}", number + 1);
        if line.starts_with('#') {
            continue;
        }
        if let Some(h) = line.strip_prefix('[') {
            if h.starts_with("AES") {
                header = h.trim_end_matches(']').to_string();
            }
            continue;
        }
        if line.is_empty() {
            records.extend(current.take());
            continue;
        }
        let (name, value) = line.split_once('=').ok_or_else(|| at("not name = value"))?;
        let (name, value) = (name.trim(), value.trim());
        if name == "COUNT" {
            records.extend(current.take());
            current = Some(Record { header: header.clone(), fields: Vec::new() });
        } else {
            let record = current.as_mut().ok_or_else(|| at("a field before COUNT"))?;
            let bytes = data_encoding::HEXLOWER_PERMISSIVE
                .decode(value.as_bytes())
                .map_err(|e| at(&e.to_string()))?;
            record.fields.push((name.to_string(), bytes));
        }
    }
    records.extend(current);
    Ok(records)
}
