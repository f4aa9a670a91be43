//! Fails when the core's modules import each other in a cycle.
//!
//! Every `.rs` file under `src/` is read (std only) and every path into the crate is collected:
//! `use` items and paths in code, starting with `crate::`, `super::`, `self::`, a child module's
//! name, or a name a `use` brought in for a module. A path is resolved to the module that
//! *defines* the item: `use` bindings (re-exports, and private imports that child modules reach
//! through `super::`) are followed to their source. Only paths count: a method call or an
//! `impl` block for another module's type adds no edge.
//!
//! The rules:
//! - Test code does not count: items under `#[cfg(test)]` (inline `mod tests { .. }` and files
//!   declared with `#[cfg(test)] mod x;`) are skipped, since tests may reach anywhere.
//! - A module re-exporting items of its own descendants (`lib.rs`, a `mod.rs` facade) gets no
//!   edge for that; re-exporting from anywhere else is an edge.
//! - Comments, doc links and string literals are ignored.
//!
//! The graph is checked at every level where a module has children: among the top-level
//! modules (`scan`, `io`, ...; `lib.rs` is the root), and among the files of each folder
//! (`io/config.rs`, `io/remote.rs`, ..., with the folder's `mod.rs` as one more node). Deeper
//! modules fold into the child of that level they belong to.
//!
//! [`KNOWN_KNOTS`] lists knots left on purpose (none). `MODULE_CYCLES_EDGES=1` prints every
//! edge with the path that makes it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

type ModPath = Vec<String>;

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

// ---- tokens ------------------------------------------------------------------------------

/// Identifiers and punctuation; comments, strings and char literals dropped.
fn tokenize(src: &str) -> Vec<String> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            // Block comments nest in Rust.
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_string(&c, i);
        } else if (ch == 'r' || ch == 'b' || ch == 'c') && raw_or_byte_string(&c, i).is_some() {
            i = raw_or_byte_string(&c, i).unwrap();
        } else if ch == '\'' {
            if c.get(i + 1) == Some(&'\\') {
                // Escaped char literal: skip to its closing quote.
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1; // a lifetime
            }
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(c[start..i].iter().collect());
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push("::".to_string());
            i += 2;
        } else {
            out.push(ch.to_string());
            i += 1;
        }
    }
    out
}

fn skip_string(c: &[char], mut i: usize) -> usize {
    i += 1;
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// `r"..."`, `r#"..."#`, `b"..."`, `br#"..."#`, `c"..."`: the index after the literal.
fn raw_or_byte_string(c: &[char], i: usize) -> Option<usize> {
    // Only at the start of a token.
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if c[j] == 'b' || c[j] == 'c' {
        j += 1;
    }
    let raw = c.get(j) == Some(&'r');
    if raw {
        j += 1;
    }
    let mut hashes = 0;
    while raw && c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if c.get(j) != Some(&'"') || (j == i) {
        return None;
    }
    if !raw {
        return Some(skip_string(c, j));
    }
    j += 1;
    while j < c.len() {
        if c[j] == '"' && (0..hashes).all(|k| c.get(j + 1 + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(j)
}

/// The index just past the item starting at `i`: its `;` or its closing `}` at depth 0.
fn item_end(t: &[String], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < t.len() {
        match t[i].as_str() {
            "{" | "(" | "[" => depth += 1,
            "}" | ")" | "]" => {
                depth -= 1;
                if depth == 0 && t[i] == "}" {
                    // `struct S {..}` or `mod m {..}` ends here; `{..};` as well.
                    return i + 1;
                }
            }
            ";" if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Is there a `#[cfg(test)]` (exactly) starting at `i`? Returns the index after it.
fn cfg_test_at(t: &[String], i: usize) -> Option<usize> {
    let want = ["#", "[", "cfg", "(", "test", ")", "]"];
    (t.len() >= i + want.len() && want.iter().zip(&t[i..]).all(|(a, b)| a == b))
        .then_some(i + want.len())
}

/// Skips outer attributes `#[...]` starting at `i`.
fn skip_attrs(t: &[String], mut i: usize) -> usize {
    while i + 1 < t.len() && t[i] == "#" && t[i + 1] == "[" {
        let mut depth = 0;
        i += 1;
        while i < t.len() {
            match t[i].as_str() {
                "[" => depth += 1,
                "]" => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    i
}

/// Drops `#[cfg(test)]` items; returns the kept tokens and the names of `#[cfg(test)] mod x;`.
fn strip_test_items(t: &[String]) -> (Vec<String>, BTreeSet<String>) {
    let mut kept = Vec::new();
    let mut test_mods = BTreeSet::new();
    let mut i = 0;
    while i < t.len() {
        if let Some(after) = cfg_test_at(t, i) {
            let start = skip_attrs(t, after);
            let end = item_end(t, start);
            let item = &t[start..end];
            if let Some(p) = item.iter().position(|s| s == "mod") {
                if item.last().map(String::as_str) == Some(";") {
                    test_mods.insert(item[p + 1].clone());
                }
            }
            i = end;
        } else {
            kept.push(t[i].clone());
            i += 1;
        }
    }
    (kept, test_mods)
}

// ---- use trees -----------------------------------------------------------------------------

/// One leaf of a use tree: its path and the name it binds (`None` for `*`).
#[derive(Debug, PartialEq)]
struct UseLeaf {
    path: Vec<String>,
    name: Option<String>,
}

/// Parses the use tree at `i` (after `use`, before `;`), prefixed by `prefix`.
fn parse_use_tree(t: &[String], i: &mut usize, prefix: &[String], out: &mut Vec<UseLeaf>) {
    let mut path = prefix.to_vec();
    if t.get(*i).map(String::as_str) == Some("::") {
        *i += 1; // a leading `::`
    }
    loop {
        match t.get(*i).map(String::as_str) {
            Some("{") => {
                *i += 1;
                while t.get(*i).map(String::as_str) != Some("}") && *i < t.len() {
                    parse_use_tree(t, i, &path, out);
                    if t.get(*i).map(String::as_str) == Some(",") {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            Some("*") => {
                *i += 1;
                out.push(UseLeaf { path, name: None });
                return;
            }
            Some(seg) if is_ident(seg) => {
                *i += 1;
                if t.get(*i).map(String::as_str) == Some("::") {
                    path.push(seg.to_string());
                    *i += 1;
                    continue;
                }
                let mut name = seg.to_string();
                if seg != "self" {
                    path.push(seg.to_string());
                } else if let Some(last) = path.last() {
                    name = last.clone();
                }
                if t.get(*i).map(String::as_str) == Some("as") {
                    name = t[*i + 1].clone();
                    *i += 2;
                }
                out.push(UseLeaf {
                    path,
                    name: Some(name),
                });
                return;
            }
            _ => return,
        }
    }
}

fn is_ident(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

// ---- the crate's modules -----------------------------------------------------------------

/// A path as written in module `at` (a `use` leaf, or a path in code).
#[derive(Debug)]
struct RawUse {
    /// The module whose code holds the path.
    at: ModPath,
    path: Vec<String>,
    /// Whether this is a `pub use` (of any visibility).
    reexport: bool,
}

#[derive(Default)]
struct Crate {
    modules: BTreeSet<ModPath>,
    /// Per module: names bound by `use` items, to the path written.
    uses: BTreeMap<ModPath, BTreeMap<String, Vec<String>>>,
    /// Per module: names bound by `pub use` (re-exports) to the path written.
    reexports: BTreeMap<ModPath, BTreeMap<String, Vec<String>>>,
    /// Per module: glob re-exports.
    globs: BTreeMap<ModPath, Vec<Vec<String>>>,
    raw: Vec<RawUse>,
}

fn module_of(rel: &Path) -> ModPath {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let file = parts.pop().unwrap();
    let stem = file.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

fn collect(dir: &Path, root: &Path, out: &mut Vec<(ModPath, String)>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).unwrap();
            out.push((module_of(rel), fs::read_to_string(&p).unwrap()));
        }
    }
}

impl Crate {
    fn from_sources(files: &[(ModPath, String)]) -> Crate {
        let mut krate = Crate::default();
        let mut stripped = Vec::new();
        let mut test_files: BTreeSet<ModPath> = BTreeSet::new();
        for (m, src) in files {
            let (tokens, test_mods) = strip_test_items(&tokenize(src));
            for name in test_mods {
                let mut child = m.clone();
                child.push(name);
                test_files.insert(child);
            }
            stripped.push((m.clone(), tokens));
        }
        // A test file's descendants are test code too.
        let is_test = |m: &ModPath| test_files.iter().any(|t| m.starts_with(t));
        for (m, _) in &stripped {
            if !is_test(m) {
                krate.modules.insert(m.clone());
            }
        }
        for (m, tokens) in &stripped {
            if !is_test(m) {
                krate.scan_file(m, tokens);
            }
        }
        krate
    }

    /// Records the `use` items and in-code paths of one file.
    fn scan_file(&mut self, file_mod: &ModPath, t: &[String]) {
        // Inline modules: (module, brace depth at which it closes).
        let mut stack: Vec<(ModPath, i32)> = vec![(file_mod.clone(), -1)];
        let mut depth = 0i32;
        let mut i = 0;
        while i < t.len() {
            let here = stack.last().unwrap().0.clone();
            match t[i].as_str() {
                "{" => depth += 1,
                "}" => {
                    depth -= 1;
                    if stack.len() > 1 && stack.last().unwrap().1 == depth {
                        stack.pop();
                    }
                }
                "mod" if t.get(i + 2).map(String::as_str) == Some("{") => {
                    let mut inner = here.clone();
                    inner.push(t[i + 1].clone());
                    self.modules.insert(inner.clone());
                    stack.push((inner, depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
                "use" => {
                    let reexport = i > 0 && (t[i - 1] == "pub" || t[i - 1] == ")");
                    let mut j = i + 1;
                    let mut leaves = Vec::new();
                    parse_use_tree(t, &mut j, &[], &mut leaves);
                    for leaf in leaves {
                        match &leaf.name {
                            Some(name) => {
                                self.uses
                                    .entry(here.clone())
                                    .or_default()
                                    .insert(name.clone(), leaf.path.clone());
                                if reexport {
                                    self.reexports
                                        .entry(here.clone())
                                        .or_default()
                                        .insert(name.clone(), leaf.path.clone());
                                }
                            }
                            None if reexport => self
                                .globs
                                .entry(here.clone())
                                .or_default()
                                .push(leaf.path.clone()),
                            None => {}
                        }
                        self.raw.push(RawUse {
                            at: here.clone(),
                            path: leaf.path,
                            reexport,
                        });
                    }
                    i = j;
                    continue;
                }
                s if is_ident(s)
                    && t.get(i + 1).map(String::as_str) == Some("::")
                    && (i == 0 || (t[i - 1] != "::" && t[i - 1] != "$")) =>
                {
                    let mut path = vec![s.to_string()];
                    let mut j = i + 2;
                    while j < t.len() && is_ident(&t[j]) {
                        path.push(t[j].clone());
                        if t.get(j + 1).map(String::as_str) != Some("::") {
                            break;
                        }
                        j += 2;
                    }
                    self.raw.push(RawUse {
                        at: here.clone(),
                        path,
                        reexport: false,
                    });
                    i = j + 1;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// The absolute form of `path` written in module `at`, if it points into the crate.
    fn absolute(&self, at: &ModPath, path: &[String]) -> Option<ModPath> {
        let first = path.first()?;
        let (mut base, rest) = match first.as_str() {
            "crate" => (vec![], &path[1..]),
            "self" => (at.clone(), &path[1..]),
            "super" => {
                let mut base = at.clone();
                let mut k = 0;
                while path.get(k).map(String::as_str) == Some("super") {
                    base.pop();
                    k += 1;
                }
                (base, &path[k..])
            }
            name => {
                let mut child = at.clone();
                child.push(name.to_string());
                if self.modules.contains(&child) {
                    (child, &path[1..])
                } else if let Some(target) = self
                    .uses
                    .get(at)
                    .and_then(|u| u.get(name))
                    .filter(|t| t.first() != Some(first))
                {
                    // A name a `use` bound; only worth following when it names a module.
                    let abs = self.absolute(at, target)?;
                    if !self.modules.contains(&abs) || abs == *at {
                        return None;
                    }
                    (abs, &path[1..])
                } else {
                    return None;
                }
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module defining the item at absolute `path`, following re-exports.
    fn defining(&self, path: &[String], hops: usize) -> Option<ModPath> {
        if hops > 16 {
            return None;
        }
        // The longest prefix that is a module.
        let mut k = path.len();
        while k > 0 && !self.modules.contains(&path[..k]) {
            k -= 1;
        }
        let module = path[..k].to_vec();
        if k == path.len() {
            return Some(module);
        }
        let name = &path[k];
        // Any `use` binding, not only `pub use`: descendants may reach private imports.
        if let Some(target) = self.uses.get(&module).and_then(|r| r.get(name)) {
            let abs = self.absolute(&module, target)?;
            let mut full = abs;
            full.extend(path[k + 1..].iter().cloned());
            return self.defining(&full, hops + 1);
        }
        // A glob re-export: the first source module that has such a child or re-export.
        for glob in self.globs.get(&module).into_iter().flatten() {
            if let Some(src) = self.absolute(&module, glob) {
                let mut child = src.clone();
                child.push(name.clone());
                let has = self.modules.contains(&child)
                    || self
                        .reexports
                        .get(&src)
                        .is_some_and(|r| r.contains_key(name));
                if has {
                    let mut full = src;
                    full.extend(path[k..].iter().cloned());
                    return self.defining(&full, hops + 1);
                }
            }
        }
        Some(module)
    }

    /// Edges "code in module A uses an item defined in module B", each with one path that
    /// makes it (as written, and where).
    fn edges(&self) -> BTreeMap<(ModPath, ModPath), String> {
        let mut edges = BTreeMap::new();
        for r in &self.raw {
            let Some(abs) = self.absolute(&r.at, &r.path) else {
                continue;
            };
            let Some(def) = self.defining(&abs, 0) else {
                continue;
            };
            // A facade re-exporting its own descendants adds no edge.
            if r.reexport && def.starts_with(&r.at) {
                continue;
            }
            if def != r.at {
                let why = format!("`{}` in {}", r.path.join("::"), show(&r.at));
                edges.entry((r.at.clone(), def)).or_insert(why);
            }
        }
        edges
    }
}

// ---- cycles --------------------------------------------------------------------------------

/// A set of modules that all reach each other (a strongly connected component).
#[derive(Debug, PartialEq)]
struct Knot {
    /// One shortest cycle through its smallest node, in order, that node again at the end.
    cycle: Vec<String>,
    /// The knot's other nodes.
    rest: Vec<String>,
}

impl Knot {
    fn members(&self) -> BTreeSet<&str> {
        self.cycle
            .iter()
            .chain(&self.rest)
            .map(String::as_str)
            .collect()
    }
}

/// Every knot of the graph, each with one cycle, so the report is stable.
fn find_cycles(edges: &BTreeSet<(String, String)>) -> Vec<Knot> {
    let mut adj: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges {
        adj.entry(a).or_default().push(b);
        adj.entry(b).or_default();
    }
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(n) = todo.pop() {
            for &m in &adj[n.as_str()] {
                if seen.insert(m.to_string()) {
                    todo.push(m.to_string());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&str, BTreeSet<String>> = adj.keys().map(|&n| (n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut cycles = Vec::new();
    for (&n, r) in &reachable {
        if done.contains(n) || !r.contains(n) {
            continue;
        }
        // Its component: the nodes that reach n and that n reaches.
        let comp: BTreeSet<&str> = r
            .iter()
            .map(String::as_str)
            .filter(|m| reachable[m].contains(n))
            .collect();
        done.extend(comp.iter().copied());
        // A shortest way back to n, by breadth-first search inside the component.
        let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([n]);
        'bfs: while let Some(x) = queue.pop_front() {
            for &y in &adj[x] {
                if !comp.contains(y) {
                    continue;
                }
                if y == n {
                    prev.insert(n, x);
                    break 'bfs;
                }
                if !prev.contains_key(y) {
                    prev.insert(y, x);
                    queue.push_back(y);
                }
            }
        }
        let mut cycle = vec![n.to_string()];
        let mut x = prev[n];
        while x != n {
            cycle.push(x.to_string());
            x = prev[x];
        }
        cycle[1..].reverse();
        let rest = comp
            .iter()
            .filter(|m| !cycle.iter().any(|c| c == *m))
            .map(|m| m.to_string())
            .collect();
        cycle.push(n.to_string());
        cycles.push(Knot { cycle, rest });
    }
    cycles
}

/// The graph among the children of `parent` (and `parent` itself): each module folds into
/// the child of `parent` it lives under. Each edge keeps one example.
fn level_edges(
    parent: &ModPath,
    edges: &BTreeMap<(ModPath, ModPath), String>,
) -> BTreeMap<(String, String), String> {
    let node = |m: &ModPath| -> Option<String> {
        if !m.starts_with(parent) {
            return None;
        }
        if m.len() == parent.len() {
            return Some(if parent.is_empty() {
                "crate (lib.rs)".to_string()
            } else {
                format!("{} (mod.rs)", show(parent))
            });
        }
        Some(show(&m[..parent.len() + 1]))
    };
    let mut level = BTreeMap::new();
    for ((a, b), why) in edges {
        if let (Some(a), Some(b)) = (node(a), node(b)) {
            if a != b {
                level.entry((a, b)).or_insert_with(|| why.clone());
            }
        }
    }
    level
}

/// A knot found at one level: the parent module whose children it joins.
struct Found {
    level: String,
    knot: Knot,
    /// The cycle, each hop with the path that makes it.
    text: String,
}

/// Every knot, at every level.
fn all_knots(krate: &Crate) -> Vec<Found> {
    let edges = krate.edges();
    let parents: BTreeSet<ModPath> = krate
        .modules
        .iter()
        .filter(|m| !m.is_empty())
        .map(|m| m[..m.len() - 1].to_vec())
        .collect();
    let mut found = Vec::new();
    for parent in &parents {
        let level = level_edges(parent, &edges);
        let pairs: BTreeSet<(String, String)> = level.keys().cloned().collect();
        for knot in find_cycles(&pairs) {
            let mut text = format!("in {}: {}", show(parent), knot.cycle.join(" -> "));
            if !knot.rest.is_empty() {
                text.push_str(&format!(" (same knot: {})", knot.rest.join(", ")));
            }
            for hop in knot.cycle.windows(2) {
                if let Some(why) = level.get(&(hop[0].clone(), hop[1].clone())) {
                    text.push_str(&format!("\n    {} -> {}: {}", hop[0], hop[1], why));
                }
            }
            found.push(Found {
                level: show(parent),
                knot,
                text,
            });
        }
    }
    found
}

/// One line per cycle, at every level, each hop with the path that makes it.
fn all_cycles(krate: &Crate) -> Vec<String> {
    all_knots(krate).into_iter().map(|f| f.text).collect()
}

/// Knots left on purpose: a level and every module of the knot. None today; a listed knot that
/// changes or goes fails the test too, so the list only shrinks.
const KNOWN_KNOTS: &[(&str, &[&str])] = &[];

#[test]
fn core_modules_import_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&src, &src, &mut files);
    let krate = Crate::from_sources(&files);
    if std::env::var_os("MODULE_CYCLES_EDGES").is_some() {
        for ((a, b), why) in krate.edges() {
            eprintln!("{} -> {}: {}", show(&a), show(&b), why);
        }
    }
    let found = all_knots(&krate);
    let is_known = |f: &Found| {
        KNOWN_KNOTS.iter().any(|(level, members)| {
            f.level == *level && f.knot.members() == members.iter().copied().collect()
        })
    };
    let new: Vec<&str> = found
        .iter()
        .filter(|f| !is_known(f))
        .map(|f| f.text.as_str())
        .collect();
    assert!(
        new.is_empty(),
        "import cycles between the core's modules:\n{}",
        new.join("\n")
    );
    for (level, members) in KNOWN_KNOTS {
        let still = found
            .iter()
            .any(|f| f.level == *level && f.knot.members() == members.iter().copied().collect());
        assert!(
            still,
            "the known knot {members:?} in {level} is gone or changed: update KNOWN_KNOTS"
        );
    }
}

// ---- the detector on made-up input ---------------------------------------------------------

fn graph(pairs: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn finds_a_cycle_in_order() {
    let g = graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e")]);
    let knots = find_cycles(&g);
    assert_eq!(knots.len(), 1);
    assert_eq!(knots[0].cycle, ["a", "b", "c", "a"]);
    assert!(knots[0].rest.is_empty());
}

#[test]
fn a_dag_has_no_cycle() {
    let g = graph(&[("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]);
    assert!(find_cycles(&g).is_empty());
}

#[test]
fn reports_each_knot_once() {
    let g = graph(&[
        ("a", "b"),
        ("b", "a"),
        ("x", "y"),
        ("y", "z"),
        ("z", "x"),
        ("y", "x"),
    ]);
    let knots = find_cycles(&g);
    assert_eq!(knots.len(), 2);
    assert_eq!(knots[0].cycle, ["a", "b", "a"]);
    assert!(knots[0].rest.is_empty());
    assert_eq!(knots[1].cycle, ["x", "y", "x"]);
    assert_eq!(knots[1].rest, ["z"]);
}

fn made_up_crate(files: &[(&str, &str)]) -> Crate {
    let files: Vec<(ModPath, String)> = files
        .iter()
        .map(|(p, s)| (module_of(Path::new(p)), s.to_string()))
        .collect();
    Crate::from_sources(&files)
}

#[test]
fn reads_use_trees_super_reexports_and_skips_tests() {
    let krate = made_up_crate(&[
        ("lib.rs", "pub mod a; pub mod b; pub use a::Thing;"),
        ("a/mod.rs", "mod x; mod y; pub use x::Thing;"),
        // `super::` and a nested use tree; the string and the comment hold no path.
        ("a/x.rs", "use super::{y::{self, Y}}; pub struct Thing; // crate::b::Z\nconst S: &str = \"crate::b::Z\";"),
        ("a/y.rs", "pub struct Y; fn f() { crate::Thing::new(); }\n#[cfg(test)]\nmod tests { use crate::b::Z; }"),
        ("b.rs", "pub struct Z; fn g() -> crate::a::Thing { todo!() }"),
    ]);
    let edges: Vec<String> = krate
        .edges()
        .keys()
        .map(|(a, b)| format!("{} -> {}", show(a), show(b)))
        .collect();
    assert_eq!(edges, ["a::x -> a::y", "a::y -> a::x", "b -> a::x"]);
    assert_eq!(
        all_cycles(&krate),
        ["in a: a::x -> a::y -> a::x\n    a::x -> a::y: `super::y` in a::x\n    a::y -> a::x: `crate::Thing::new` in a::y"]
    );
}

#[test]
fn test_files_do_not_count() {
    let krate = made_up_crate(&[
        ("lib.rs", "mod a; mod b;"),
        (
            "a/mod.rs",
            "pub fn f() { crate::b::g() }\n#[cfg(test)]\nmod tests;",
        ),
        ("a/tests.rs", "use crate::b::*; fn t() { crate::a::f(); }"),
        ("b.rs", "pub fn g() {} fn h() { crate::a::f() }"),
    ]);
    assert!(all_cycles(&krate)[0].starts_with("in crate: a -> b -> a\n"));
    let krate = made_up_crate(&[
        ("lib.rs", "mod a; mod b;"),
        ("a/mod.rs", "#[cfg(test)]\nmod tests;"),
        ("a/tests.rs", "use crate::b::g;"),
        ("b.rs", "pub fn g() {} fn h() { crate::a::f() }"),
    ]);
    assert!(all_cycles(&krate).is_empty());
}
