//! The library's modules import one way (`src/lib.rs`): each module uses
//! only the modules listed before it, so that none depends on one that
//! depends on it.

use std::path::{Path, PathBuf};

const ORDER: [&str; 8] = ["units", "cli", "cc", "transport", "workload", "io", "tcp", "ffi"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules `crate::NAME` that the code (not the comments) of `text` names.
fn uses(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            found.push(name);
        }
    }
    found
}

#[test]
fn modules_import_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut violations = Vec::new();
    for (rank, module) in ORDER.iter().enumerate() {
        let mut files = Vec::new();
        let dir = src.join(module);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        } else {
            files.push(src.join(format!("{module}.rs")));
        }
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            for used in uses(&text) {
                match ORDER.iter().position(|m| *m == used) {
                    Some(r) if r <= rank => {}
                    Some(_) => violations.push(format!("{} uses crate::{used}", file.display())),
                    None => violations.push(format!("{} uses crate::{used}, a module of no layer", file.display())),
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "imports against the layers of src/lib.rs:\n{}",
        violations.join("\n")
    );
}

#[test]
fn every_module_of_the_library_has_a_layer() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join("lib.rs")).unwrap_or_default();
    let mut modules: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ").or_else(|| l.strip_prefix("mod ")))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    let mut layers = ORDER.to_vec();
    modules.sort();
    layers.sort();
    assert_eq!(modules, layers);
}

#[test]
fn the_check_sees_a_use_and_not_a_comment() {
    assert_eq!(uses("use crate::io::net; // crate::ffi\n/// [`crate::tcp`]"), ["io"]);
}
