//! `docs/configuration.md` is generated from the settings table; this fails when it drifts.

use std::path::PathBuf;

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md")
}

#[test]
fn docs_configuration_md_matches_the_settings_table() {
    let rendered = handoff_config::configuration_markdown();
    let path = doc_path();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &rendered).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    if on_disk != rendered {
        let line = 1 + on_disk
            .lines()
            .zip(rendered.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| on_disk.lines().count().min(rendered.lines().count()));
        panic!(
            "docs/configuration.md differs from the settings table (first at line {line}); \
             regenerate it with: {}",
            handoff_config::REGENERATE
        );
    }
}
