//! Inside every crate of the workspace, the top-level modules import one another one way: no
//! module reaches, directly or around a circle, back to a module that depends on it.
//!
//! It lives here because handoff-config already holds the repository-wide checks (`docs.rs`,
//! `doc_links.rs`); a crate of its own for one std-only test would cost a build for nothing.
//!
//! How it reads the code (std only, no parser):
//! - A crate's roots are `src/lib.rs`, `src/main.rs` and `src/bin/*`; each root's `mod name;`
//!   lines give its top-level modules, and every file those declare (followed the way rustc
//!   does, `#[path]` included) belongs to the top-level module it sits under.
//! - An edge is a `crate::name` path (in `use` lines, grouped `use crate::{a, b::c}` included,
//!   and in expressions, types and macros) or a `super::` path that climbs to the crate root.
//!   A `crate::Item` that the root re-exports (`pub use name::Item`) is not traced to `name`:
//!   the check sees module paths only.
//! - Comments, doc comments and string literals are skipped. Unit tests (`#[cfg(test)]` modules
//!   and `*_tests.rs` files) count like any code: a test that borrows another module's fixtures
//!   ties the two modules together as much as a `use` in the code under test.
//!
//! A failure names each circle's modules and, for every edge inside it, one `file:line`.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

/// One lexical token with the line it starts on.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String, usize),
    Str(String, usize),
    Punct(&'static str, usize),
    Other(char, usize),
}

impl Token {
    /// The line the token starts on.
    fn line(&self) -> usize {
        match self {
            Token::Ident(_, line)
            | Token::Str(_, line)
            | Token::Punct(_, line)
            | Token::Other(_, line) => *line,
        }
    }

    fn is_ident(&self, word: &str) -> bool {
        matches!(self, Token::Ident(text, _) if text == word)
    }

    fn is(&self, c: char) -> bool {
        matches!(self, Token::Other(found, _) if *found == c)
    }

    fn is_path_sep(&self) -> bool {
        matches!(self, Token::Punct("::", _))
    }

    fn ident(&self) -> Option<&str> {
        match self {
            Token::Ident(text, _) => Some(text),
            _ => None,
        }
    }
}

/// Reads Rust source into tokens, dropping comments and keeping only what paths need.
struct Lexer {
    chars: Vec<char>,
    at: usize,
    line: usize,
    out: Vec<Token>,
}

/// The tokens of Rust source `text`, comments left out.
fn tokenize(text: &str) -> Vec<Token> {
    let mut lexer = Lexer {
        chars: text.chars().collect(),
        at: 0,
        line: 1,
        out: Vec::new(),
    };
    lexer.run();
    lexer.out
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek(0)?;
        self.at += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn run(&mut self) {
        while let Some(c) = self.peek(0) {
            let line = self.line;
            match c {
                _ if c.is_whitespace() => {
                    self.bump();
                }
                '/' if self.peek(1) == Some('/') => self.line_comment(),
                '/' if self.peek(1) == Some('*') => self.block_comment(),
                '"' => {
                    self.bump();
                    let text = self.quoted();
                    self.out.push(Token::Str(text, line));
                }
                '\'' => self.quote_or_lifetime(),
                ':' if self.peek(1) == Some(':') => {
                    self.at += 2;
                    self.out.push(Token::Punct("::", line));
                }
                _ if c.is_alphanumeric() || c == '_' => self.word(),
                _ => {
                    self.bump();
                    self.out.push(Token::Other(c, line));
                }
            }
        }
    }

    fn line_comment(&mut self) {
        while self.peek(0).is_some_and(|c| c != '\n') {
            self.bump();
        }
    }

    fn block_comment(&mut self) {
        let mut depth = 0usize;
        while let Some(c) = self.peek(0) {
            if c == '/' && self.peek(1) == Some('*') {
                depth += 1;
                self.at += 2;
            } else if c == '*' && self.peek(1) == Some('/') {
                depth -= 1;
                self.at += 2;
                if depth == 0 {
                    return;
                }
            } else {
                self.bump();
            }
        }
    }

    /// The rest of a `"…"` literal (the opening quote already read), escapes kept as written.
    fn quoted(&mut self) -> String {
        let mut text = String::new();
        while let Some(c) = self.bump() {
            match c {
                '\\' => {
                    text.push(c);
                    if let Some(escaped) = self.bump() {
                        text.push(escaped);
                    }
                }
                '"' => break,
                _ => text.push(c),
            }
        }
        text
    }

    /// The rest of a raw string `r#…"…"#…` from the first `#` or `"`.
    fn raw_quoted(&mut self) -> String {
        let mut hashes = 0;
        while self.peek(0) == Some('#') {
            hashes += 1;
            self.bump();
        }
        self.bump();
        let mut text = String::new();
        while let Some(c) = self.bump() {
            if c == '"' && (0..hashes).all(|i| self.peek(i) == Some('#')) {
                self.at += hashes;
                break;
            }
            text.push(c);
        }
        text
    }

    /// `'x'` and `'\n'` are characters (skipped); `'a` is a lifetime (skipped with its name).
    fn quote_or_lifetime(&mut self) {
        self.bump();
        if self.peek(0) == Some('\\') {
            while let Some(c) = self.bump() {
                if c == '\\' {
                    self.bump();
                } else if c == '\'' {
                    return;
                }
            }
        } else if self.peek(1) == Some('\'') {
            self.at += 2;
        } else {
            while self
                .peek(0)
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
            {
                self.bump();
            }
        }
    }

    /// An identifier or number, or the prefix of a byte, C or raw string, or a raw identifier.
    fn word(&mut self) {
        let line = self.line;
        let mut word = String::new();
        while let Some(c) = self.peek(0).filter(|c| c.is_alphanumeric() || *c == '_') {
            word.push(c);
            self.bump();
        }
        let next = self.peek(0);
        let raw = matches!(word.as_str(), "r" | "br" | "cr");
        if raw && (next == Some('"') || next == Some('#') && self.raw_string_follows()) {
            let text = self.raw_quoted();
            self.out.push(Token::Str(text, line));
        } else if raw && next == Some('#') {
            self.bump();
            self.word();
        } else if matches!(word.as_str(), "b" | "c") && next == Some('"') {
            self.bump();
            let text = self.quoted();
            self.out.push(Token::Str(text, line));
        } else if word == "b" && next == Some('\'') {
            self.quote_or_lifetime();
        } else {
            self.out.push(Token::Ident(word, line));
        }
    }

    fn raw_string_follows(&self) -> bool {
        let mut ahead = 0;
        while self.peek(ahead) == Some('#') {
            ahead += 1;
        }
        self.peek(ahead) == Some('"')
    }
}

/// The index just past the bracket that closes the one at `open`.
fn past_closing(tokens: &[Token], open: usize) -> usize {
    let mut depth = 0i32;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        if token.is('(') || token.is('[') || token.is('{') {
            depth += 1;
        } else if token.is(')') || token.is(']') || token.is('}') {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        }
    }
    tokens.len()
}

/// Whether the tokens from `at` read `pattern`: words separated by spaces, each an identifier
/// or one punctuation character.
fn reads(tokens: &[Token], at: usize, pattern: &str) -> bool {
    pattern.split(' ').enumerate().all(|(i, want)| {
        tokens
            .get(at + i)
            .is_some_and(|token| match want.chars().next() {
                Some(c) if c.is_alphanumeric() => token.is_ident(want),
                Some(c) => token.is(c),
                None => false,
            })
    })
}

/// A path's first segment after `crate::` (or after the `super::`s that reach the crate root).
#[derive(Debug)]
struct Reference {
    name: String,
    line: usize,
}

/// A `mod name;` line: where its file lies is decided by the caller.
#[derive(Debug)]
struct Declared {
    /// Inline modules (`mod a { … }`) around the declaration.
    inline: Vec<String>,
    name: String,
    path_attr: Option<String>,
    line: usize,
}

/// What one file says: the modules it declares and the crate-root paths it names.
#[derive(Debug, Default)]
struct Scan {
    declared: Vec<Declared>,
    references: Vec<Reference>,
}

/// Scans a file whose module sits `depth` modules below the crate root.
fn scan(tokens: &[Token], depth: usize) -> Scan {
    let mut found = Scan::default();
    let mut inline: Vec<(String, i32)> = Vec::new();
    let mut braces = 0i32;
    let mut path_attr = None;
    for (i, token) in tokens.iter().enumerate() {
        if token.is('{') {
            braces += 1;
        } else if token.is('}') {
            braces -= 1;
            if inline.last().is_some_and(|(_, open)| *open == braces) {
                inline.pop();
            }
        } else if let Some(path) = path_attribute(tokens, i) {
            path_attr = Some(path);
        } else if token.is_ident("mod") {
            let Some(name) = tokens.get(i + 1).and_then(Token::ident) else {
                continue;
            };
            if tokens.get(i + 2).is_some_and(|t| t.is('{')) {
                inline.push((name.to_owned(), braces));
            } else {
                found.declared.push(Declared {
                    inline: inline.iter().map(|(name, _)| name.clone()).collect(),
                    name: name.to_owned(),
                    path_attr: path_attr.take(),
                    line: token.line(),
                });
            }
        } else if let Some(after) = root_path_start(tokens, i, depth + inline.len()) {
            root_segments(tokens, after, &mut found.references);
        }
    }
    found
}

/// `#[path = "…"]` starting at `at`.
fn path_attribute(tokens: &[Token], at: usize) -> Option<String> {
    if !reads(tokens, at, "# [ path =") || !reads(tokens, at + 5, "]") {
        return None;
    }
    match tokens.get(at + 4) {
        Some(Token::Str(path, _)) => Some(path.clone()),
        _ => None,
    }
}

/// If a path that starts at `at` names the crate root (`crate::`, `$crate::`, or as many
/// `super::` as the module is deep), the index of what follows its last `::`.
fn root_path_start(tokens: &[Token], at: usize, depth: usize) -> Option<usize> {
    let previous_is_sep = at > 0 && tokens[at - 1].is_path_sep();
    if previous_is_sep {
        return None;
    }
    if tokens[at].is_ident("crate") {
        return tokens
            .get(at + 1)
            .filter(|t| t.is_path_sep())
            .map(|_| at + 2);
    }
    let mut climbed = 0;
    let mut i = at;
    while tokens.get(i).is_some_and(|t| t.is_ident("super"))
        && tokens.get(i + 1).is_some_and(Token::is_path_sep)
    {
        climbed += 1;
        i += 2;
    }
    (climbed > 0 && climbed == depth).then_some(i)
}

/// The first segments named at `at`: one name, or each entry of a `{…}` group.
fn root_segments(tokens: &[Token], at: usize, out: &mut Vec<Reference>) {
    match tokens.get(at) {
        Some(Token::Ident(name, line)) => out.push(Reference {
            name: name.clone(),
            line: *line,
        }),
        Some(token) if token.is('{') => {
            let end = past_closing(tokens, at).saturating_sub(1);
            let mut entry_start = true;
            let mut depth = 0;
            for token in &tokens[at + 1..end] {
                match token {
                    Token::Ident(name, line) if entry_start && depth == 0 => {
                        out.push(Reference {
                            name: name.clone(),
                            line: *line,
                        });
                    }
                    _ if token.is('{') => depth += 1,
                    _ if token.is('}') => depth -= 1,
                    _ => {}
                }
                entry_start = depth == 0 && token.is(',');
            }
        }
        _ => {}
    }
}

/// One file of a crate, with the top-level module it belongs to.
struct Unit {
    module: String,
    file: PathBuf,
    scan: Scan,
}

/// The tokens of `file`.
fn read_tokens(file: &Path) -> Vec<Token> {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", file.display()));
    tokenize(&text)
}

/// Where the file of `mod name;` lies, per rustc's rules, and the directory its own `mod`s
/// resolve in.
fn module_file(declaring: &Path, children_dir: &Path, declared: &Declared) -> (PathBuf, PathBuf) {
    let mut dir = children_dir.to_path_buf();
    dir.extend(&declared.inline);
    if let Some(path) = &declared.path_attr {
        let base = if declared.inline.is_empty() {
            declaring
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default()
        } else {
            dir
        };
        let file = base.join(path);
        let own_dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        return (file, own_dir);
    }
    let flat = dir.join(format!("{}.rs", declared.name));
    let nested = dir.join(&declared.name).join("mod.rs");
    let own_dir = dir.join(&declared.name);
    match (flat.is_file(), nested.is_file()) {
        (true, _) => (flat, own_dir),
        (false, true) => (nested, own_dir),
        (false, false) => panic!(
            "{}:{}: `mod {};` has neither {} nor {}",
            declaring.display(),
            declared.line,
            declared.name,
            flat.display(),
            nested.display()
        ),
    }
}

/// Reads `file` (of top-level `module`, `depth` deep) and every file it declares, recursively.
fn load(file: &Path, children_dir: &Path, module: &str, depth: usize, units: &mut Vec<Unit>) {
    let scan = scan(&read_tokens(file), depth);
    for declared in &scan.declared {
        let (child, child_dir) = module_file(file, children_dir, declared);
        let child_depth = depth + declared.inline.len() + 1;
        load(&child, &child_dir, module, child_depth, units);
    }
    units.push(Unit {
        module: module.to_owned(),
        file: file.to_path_buf(),
        scan,
    });
}

/// A crate root's dependency graph: module → module → the first `file:line` of that edge.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// The graph of the top-level modules the crate root `root` declares (places shown relative
/// to `workspace`).
fn crate_graph(root: &Path, workspace: &Path) -> Graph {
    let root_tokens = read_tokens(root);
    let children_dir = root.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut units = Vec::new();
    let top = scan(&root_tokens, 0);
    for declared in &top.declared {
        let (file, dir) = module_file(root, &children_dir, declared);
        load(&file, &dir, &declared.name, 1, &mut units);
    }
    let modules: BTreeSet<String> = top.declared.iter().map(|d| d.name.clone()).collect();
    let mut graph: Graph = modules
        .iter()
        .map(|m| (m.clone(), BTreeMap::new()))
        .collect();
    units.sort_by(|a, b| a.file.cmp(&b.file));
    for unit in &units {
        for reference in &unit.scan.references {
            let target = &reference.name;
            if !modules.contains(target) || *target == unit.module {
                continue;
            }
            let shown = unit.file.strip_prefix(workspace).unwrap_or(&unit.file);
            let place = format!("{}:{}", shown.display(), reference.line);
            if let Some(edges) = graph.get_mut(&unit.module) {
                edges.entry(target.clone()).or_insert(place);
            }
        }
    }
    graph
}

/// Tarjan's strongly connected components with more than one module, each sorted.
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, node: &'a str) {
            let next = self.index.len();
            self.index.insert(node, next);
            self.low.insert(node, next);
            self.stack.push(node);
            self.on_stack.insert(node);
            let graph = self.graph;
            for target in graph.get(node).into_iter().flat_map(BTreeMap::keys) {
                let target = target.as_str();
                if !self.index.contains_key(target) {
                    self.visit(target);
                    let low = self.low[node].min(self.low[target]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(target) {
                    let low = self.low[node].min(self.index[target]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    component.push(member.to_owned());
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !tarjan.index.contains_key(node.as_str()) {
            tarjan.visit(node);
        }
    }
    tarjan.found.sort();
    tarjan.found
}

/// The workspace root: the nearest directory above this crate whose Cargo.toml has `[workspace]`.
fn workspace_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .ancestors()
        .find(|dir| {
            std::fs::read_to_string(dir.join("Cargo.toml"))
                .is_ok_and(|toml| toml.lines().any(|line| line.trim() == "[workspace]"))
        })
        .map(Path::to_path_buf)
        .unwrap_or_else(|| panic!("no workspace Cargo.toml above {}", manifest_dir.display()))
}

/// Every crate root (library, main binary, `src/bin/*`) of every crate in the workspace's
/// `members` (plain paths and `dir/*` globs).
fn crate_roots(workspace: &Path) -> Vec<PathBuf> {
    let toml = std::fs::read_to_string(workspace.join("Cargo.toml")).unwrap_or_default();
    let members = toml
        .split_once("members")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list)
        .unwrap_or_default();
    let mut crates = Vec::new();
    for member in members.split('"').skip(1).step_by(2) {
        match member.strip_suffix("/*") {
            Some(parent) => crates.extend(entries(&workspace.join(parent))),
            None => crates.push(workspace.join(member)),
        }
    }
    let mut roots = Vec::new();
    for krate in crates {
        let src = krate.join("src");
        roots.extend(
            [src.join("lib.rs"), src.join("main.rs")]
                .into_iter()
                .filter(|p| p.is_file()),
        );
        for bin in entries(&src.join("bin")) {
            let main = bin.join("main.rs");
            roots.push(if bin.is_dir() { main } else { bin });
        }
    }
    roots.retain(|root| root.extension().is_some_and(|ext| ext == "rs") && root.is_file());
    roots.sort();
    roots
}

/// The entries of `dir`, sorted; none when it does not exist.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|read| {
            read.filter_map(Result::ok)
                .map(|entry| entry.path())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// One circle, its modules and each edge between them with the line that makes it.
fn describe(root: &Path, graph: &Graph, circle: &[String]) -> String {
    let mut text = format!("{}: {}\n", root.display(), circle.join(", "));
    for from in circle {
        for (to, place) in &graph[from] {
            if circle.contains(to) {
                text.push_str(&format!("    {from} -> {to}  ({place})\n"));
            }
        }
    }
    text
}

#[test]
fn no_crate_has_an_import_cycle_between_its_top_level_modules() {
    let workspace = workspace_root();
    let roots = crate_roots(&workspace);
    assert!(roots.len() > 10, "found only {} crate roots", roots.len());
    let mut report = String::new();
    for root in &roots {
        let graph = crate_graph(root, &workspace);
        let shown = root.strip_prefix(&workspace).unwrap_or(root);
        for circle in circles(&graph) {
            report.push_str(&describe(shown, &graph, &circle));
        }
    }
    assert!(
        report.is_empty(),
        "top-level modules that import each other around a circle (move the shared type into a \
         leaf module, or the function over it up into the module that owns the state):\n{report}"
    );
}

/// The failure text for a crate made of `sources` (paths under `src/`).
fn report_of(sources: &[(&str, &str)]) -> String {
    let dir = tempdir();
    for (path, text) in sources {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|err| panic!("{err}"));
        }
        std::fs::write(&file, text).unwrap_or_else(|err| panic!("{err}"));
    }
    let graph = crate_graph(&dir.join("lib.rs"), &dir);
    let report: String = circles(&graph)
        .iter()
        .map(|circle| describe(Path::new("lib.rs"), &graph, circle))
        .collect();
    std::fs::remove_dir_all(&dir).unwrap_or_else(|err| panic!("{err}"));
    report
}

/// A directory name under the system's temporary directory no other run uses.
fn tempdir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    std::env::temp_dir().join(format!("module-cycles-{}-{nanos}", std::process::id()))
}

#[test]
fn a_grouped_use_a_nested_file_and_a_super_path_make_edges() {
    let report = report_of(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a/mod.rs", "mod inner;\n"),
        ("a/inner.rs", "use crate::{\n    b::{X, Y},\n    c,\n};\n"),
        (
            "b.rs",
            "mod deep {\n    fn f() { super::super::c::g() }\n}\n",
        ),
        ("c.rs", "fn g() {\n    let _ = crate::a::inner::Z;\n}\n"),
    ]);
    let expected = "lib.rs: a, b, c\n    a -> b  (a/inner.rs:2)\n    a -> c  (a/inner.rs:3)\n    \
                    b -> c  (b.rs:2)\n    c -> a  (c.rs:2)\n";
    assert_eq!(report, expected);
}

#[test]
fn comments_strings_and_shallow_super_paths_are_no_edges() {
    let report = report_of(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a/mod.rs", "mod inner;\nuse crate::b::X;\n"),
        ("a/inner.rs", "use super::b;\n"),
        (
            "b.rs",
            "// use crate::a;\n/// [`crate::a`]\n/* crate::a /* nested */ */\n\
             const S: &str = \"crate::a::x\";\nconst R: &str = r#\"crate::a\"#;\n\
             const C: char = '\"'; fn f<'a>(_: &'a str) {}\n",
        ),
    ]);
    assert_eq!(report, "");
}

#[test]
fn a_unit_test_file_declared_by_path_counts() {
    let report = report_of(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use crate::b::X;\n"),
        (
            "b.rs",
            "#[cfg(test)]\n#[path = \"b_tests.rs\"]\nmod tests;\n",
        ),
        ("b_tests.rs", "use crate::a::fixture;\n"),
    ]);
    assert_eq!(
        report,
        "lib.rs: a, b\n    a -> b  (a.rs:1)\n    b -> a  (b_tests.rs:1)\n"
    );
}
