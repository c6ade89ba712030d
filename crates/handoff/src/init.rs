//! `handoff init`: writes a commented `handoff.toml` (every setting at its default, a provider
//! example, or with `--provider` a provider set), readable by its owner only since it may come
//! to hold tokens and passwords.

use std::{
    fs::OpenOptions,
    io::{ErrorKind, Write},
    os::unix::fs::{OpenOptionsExt, PermissionsExt},
    path::{Path, PathBuf},
};

use anyhow::{Context, bail};
use handoff_config::InitProvider;

use crate::cli::InitArgs;
use crate::client::terminal::print_line;

/// Owner read/write only: the file may hold secrets.
const MODE: u32 = 0o600;

/// The exit status of `handoff init`, with the error on stderr as every command prints it.
pub fn exit_code(result: anyhow::Result<()>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("handoff: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Writes the file and says where; refuses a directory, and an existing file without `--force`.
pub fn run(args: &InitArgs) -> anyhow::Result<()> {
    let path = &args.path;
    if path.is_dir() {
        bail!(
            "{} is a directory; name the file to write, e.g. --path {}",
            path.display(),
            path.join("handoff.toml").display()
        );
    }
    let provider = match (&args.provider, &args.model) {
        (Some(url), Some(model)) => Some(InitProvider::new(url, model, args.key_env.as_deref())?),
        _ => None,
    };
    let text = match &provider {
        Some(provider) => handoff_config::init_toml_with_provider(provider),
        None => handoff_config::init_toml(),
    };
    if args.force {
        replace(path, &text)?;
    } else {
        create_new(path, &text)?;
    }
    let what = match &provider {
        Some(provider) => format!(
            "tasks use {} through Handoff's model gateway, the judge the same model",
            provider.model()
        ),
        None => "every setting commented out at its default, and a provider example".into(),
    };
    let check = if path == Path::new("handoff.toml") {
        "handoff doctor".to_owned()
    } else {
        format!("handoff doctor --config {}", path.display())
    };
    print_line(&format!(
        "wrote {} (mode 0600): {what}; check it with `{check}`",
        path.display()
    ));
    Ok(())
}

/// Creates the file, failing if anything exists at the path (never following a symlink there).
fn create_new(path: &Path, text: &str) -> anyhow::Result<()> {
    let mut file = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(MODE)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::AlreadyExists => bail!(
            "{} already exists; keeping it (pass --force to overwrite it)",
            path.display()
        ),
        Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
    };
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

/// Writes a new file beside `path` and renames it over: the old file is replaced whole or not
/// at all, and the new one never exists with wider permissions.
fn replace(path: &Path, text: &str) -> anyhow::Result<()> {
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?;
    let mut temp_name = name.to_os_string();
    temp_name.push(format!(".init-{}.tmp", std::process::id()));
    let temp: PathBuf = path.with_file_name(temp_name);
    let written = create_new(&temp, text).and_then(|()| {
        // The mode given at creation is narrowed by the umask only, never widened; make it exact.
        std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(MODE))
            .with_context(|| format!("setting the mode of {}", temp.display()))?;
        std::fs::rename(&temp, path).with_context(|| format!("replacing {}", path.display()))
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}
