//! Matching URIs against a parsed template: a small backtracking-free automaton.

use super::*;

#[derive(Debug, Clone, Copy)]
pub(super) enum Inst {
    /// Consume this byte.
    Byte(u8),
    /// Consume one byte from class `n`.
    Class(usize),
    /// Try the first target, then (lower priority) the second.
    Split(usize, usize),
    Jmp(usize),
    /// Record the current position in slot `n`.
    Save(usize),
    /// Succeeds at the end of input.
    Match,
}

/// One expression (or run of query expressions) as seen by the matcher.
#[derive(Debug, Clone)]
pub(super) struct Region {
    op: Op,
    vars: Vec<VarSpec>,
}

impl Region {
    /// A lone string-ish variable whose value may contain the separator.
    pub(super) fn whole(&self) -> bool {
        self.vars.len() == 1 && matches!(self.op, Op::Simple | Op::Reserved | Op::Fragment)
    }
}

#[derive(Debug, Clone)]
pub(super) struct Matcher {
    prog: Vec<Inst>,
    classes: Vec<[bool; 256]>,
    regions: Vec<Region>,
}

pub(super) struct Compiler {
    prog: Vec<Inst>,
    classes: Vec<[bool; 256]>,
}

impl Compiler {
    pub(super) fn emit(&mut self, inst: Inst) -> usize {
        self.prog.push(inst);
        self.prog.len() - 1
    }

    pub(super) fn pc(&self) -> usize {
        self.prog.len()
    }

    pub(super) fn patch_split(&mut self, at: usize, first: usize, second: usize) {
        self.prog[at] = Inst::Split(first, second);
    }

    /// `class*` (or `class+`), preferring to stop early.
    pub(super) fn item(&mut self, class: usize, at_least_one: bool) {
        if at_least_one {
            self.emit(Inst::Class(class));
        }
        let split = self.emit(Inst::Split(0, 0));
        let body = self.emit(Inst::Class(class));
        self.emit(Inst::Jmp(split));
        let exit = self.pc();
        self.patch_split(split, exit, body);
    }

    pub(super) fn region(&mut self, index: usize, region: &Region) {
        let op = region.op;
        let sep = op.sep();
        let mut class = [true; 256];
        for &b in op.excluded() {
            class[usize::from(b)] = false;
        }
        if !region.whole() {
            class[usize::from(sep)] = false;
        }
        self.classes.push(class);
        let class = self.classes.len() - 1;

        self.emit(Inst::Save(2 * index));
        let mut to_end = Vec::new();
        let first = op.first();
        if let Some(first) = first {
            // Optional: prefer skipping.
            let split = self.emit(Inst::Split(0, 0));
            to_end.push(split);
            self.emit(Inst::Byte(first));
        }
        self.item(class, first.is_none());
        let unbounded = !region.whole() && region.vars.iter().any(|v| v.explode);
        if unbounded {
            let split = self.emit(Inst::Split(0, 0));
            to_end.push(split);
            self.emit(Inst::Byte(sep));
            self.item(class, false);
            self.emit(Inst::Jmp(split));
        } else if !region.whole() {
            for _ in 1..region.vars.len() {
                let split = self.emit(Inst::Split(0, 0));
                to_end.push(split);
                self.emit(Inst::Byte(sep));
                self.item(class, false);
            }
        }
        let end = self.emit(Inst::Save(2 * index + 1));
        for split in to_end {
            // Every split here prefers ending the region; its other target is
            // the instruction right after it.
            self.patch_split(split, end, split + 1);
        }
    }
}

impl Matcher {
    pub(super) fn compile(parts: &[Part]) -> Self {
        let mut c = Compiler { prog: Vec::new(), classes: Vec::new() };
        let mut regions: Vec<Region> = Vec::new();
        let mut prev_query = false;
        // First group parts into literal bytes and regions.
        enum Piece<'a> {
            Lit(&'a str),
            Region(usize),
        }
        let mut pieces = Vec::new();
        for part in parts {
            match part {
                Part::Literal(text) => {
                    pieces.push(Piece::Lit(text));
                    prev_query = false;
                }
                Part::Expr { op, vars } => {
                    if prev_query
                        && *op == Op::QueryCont
                        && let Some(last) = regions.last_mut()
                    {
                        last.vars.extend(vars.iter().cloned());
                        continue;
                    }
                    prev_query = matches!(op, Op::Query | Op::QueryCont);
                    regions.push(Region { op: *op, vars: vars.clone() });
                    pieces.push(Piece::Region(regions.len() - 1));
                }
            }
        }
        for piece in &pieces {
            match piece {
                Piece::Lit(text) => {
                    for &b in text.as_bytes() {
                        c.emit(Inst::Byte(b));
                    }
                }
                Piece::Region(index) => c.region(*index, &regions[*index]),
            }
        }
        c.emit(Inst::Match);
        Matcher { prog: c.prog, classes: c.classes, regions }
    }

    pub(super) fn run(&self, input: &[u8]) -> Option<UriMatch> {
        let slots = self.pike(input)?;
        let mut out: Vec<(String, String)> = Vec::new();
        for (i, region) in self.regions.iter().enumerate() {
            let start = *slots.get(2 * i)?;
            let end = *slots.get(2 * i + 1)?;
            let text = input.get(start..end)?;
            extract(region, text, &mut out)?;
        }
        Some(UriMatch { vars: out })
    }

    /// Run the automaton; the slots of the highest-priority full match.
    /// Work is O(input length × program length).
    pub(super) fn pike(&self, input: &[u8]) -> Option<Vec<usize>> {
        let nslots = self.regions.len() * 2;
        let mut vm =
            Vm { prog: &self.prog, input, visited: vec![0; self.prog.len()], generation: 1, stack: Vec::new() };
        let mut clist = Threads::default();
        let mut nlist = Threads::default();
        let mut scratch = vec![usize::MAX; nslots];
        vm.add(&mut clist, 0, &mut scratch, 0);
        for pos in 0..=input.len() {
            if clist.pcs.is_empty() {
                return None;
            }
            vm.generation += 1;
            nlist.clear();
            let byte = input.get(pos).copied();
            for t in 0..clist.pcs.len() {
                let pc = clist.pcs[t];
                let slots = &clist.slots[t * nslots..(t + 1) * nslots];
                let advance = match (self.prog[pc], byte) {
                    (Inst::Match, None) => return Some(slots.to_vec()),
                    (Inst::Byte(want), Some(b)) => want == b,
                    (Inst::Class(class), Some(b)) => self.classes[class][usize::from(b)],
                    _ => false,
                };
                if advance {
                    scratch.copy_from_slice(slots);
                    vm.add(&mut nlist, pc + 1, &mut scratch, pos + 1);
                }
            }
            std::mem::swap(&mut clist, &mut nlist);
        }
        None
    }
}

#[derive(Default)]
pub(super) struct Threads {
    pcs: Vec<usize>,
    slots: Vec<usize>,
}

impl Threads {
    pub(super) fn clear(&mut self) {
        self.pcs.clear();
        self.slots.clear();
    }
}

pub(super) enum Frame {
    Explore(usize),
    Restore(usize, usize),
}

pub(super) struct Vm<'a> {
    prog: &'a [Inst],
    input: &'a [u8],
    visited: Vec<u64>,
    generation: u64,
    stack: Vec<Frame>,
}

impl Vm<'_> {
    /// Follow ε-transitions from `pc`, adding consuming states to `list` in
    /// priority order. Each state is added at most once per position.
    pub(super) fn add(&mut self, list: &mut Threads, pc: usize, slots: &mut [usize], pos: usize) {
        let generation = self.generation;
        self.stack.push(Frame::Explore(pc));
        while let Some(frame) = self.stack.pop() {
            match frame {
                Frame::Restore(slot, old) => slots[slot] = old,
                Frame::Explore(pc) => {
                    if self.visited[pc] == generation {
                        continue;
                    }
                    self.visited[pc] = generation;
                    match self.prog[pc] {
                        Inst::Jmp(to) => self.stack.push(Frame::Explore(to)),
                        Inst::Split(first, second) => {
                            self.stack.push(Frame::Explore(second));
                            self.stack.push(Frame::Explore(first));
                        }
                        // A variable starts and ends between characters only: never inside
                        // a `%XX` triplet, a UTF-8 sequence, or the triplets of one encoded
                        // character (found by fuzzing: `{a}{b}` missed `%41%42`).
                        Inst::Save(_) if !boundary(self.input, pos) => {}
                        Inst::Save(slot) => {
                            self.stack.push(Frame::Restore(slot, slots[slot]));
                            slots[slot] = pos;
                            self.stack.push(Frame::Explore(pc + 1));
                        }
                        Inst::Byte(_) | Inst::Class(_) | Inst::Match => {
                            list.pcs.push(pc);
                            list.slots.extend_from_slice(slots);
                        }
                    }
                }
            }
        }
    }
}

/// Whether `pos` falls between two characters of `input` (raw or percent-encoded).
fn boundary(input: &[u8], pos: usize) -> bool {
    let at = |i: usize| input.get(i).copied();
    let continuation = |b: Option<u8>| b.is_some_and(|b| (0x80..=0xbf).contains(&b));
    let encoded_continuation =
        at(pos) == Some(b'%') && matches!(at(pos + 1), Some(b'8' | b'9' | b'a' | b'b' | b'A' | b'B'));
    !(continuation(at(pos))
        || encoded_continuation
        || (pos >= 1 && at(pos - 1) == Some(b'%'))
        || (pos >= 2 && at(pos - 2) == Some(b'%')))
}

/// Turn the text matched by one region into variables.
pub(super) fn extract(region: &Region, text: &[u8], out: &mut Vec<(String, String)>) -> Option<()> {
    if text.is_empty() {
        return Some(()); // skipped: every variable undefined
    }
    let op = region.op;
    let content = if op.first().is_some() { &text[1..] } else { text };
    let sep = op.sep();
    if op.named() {
        let mut seen: Vec<(usize, Vec<String>)> = Vec::new();
        for item in content.split(|&b| b == sep) {
            if item.is_empty() {
                continue;
            }
            let (name, value) = match item.iter().position(|&b| b == b'=') {
                Some(eq) => (&item[..eq], &item[eq + 1..]),
                None => (item, &b""[..]),
            };
            let index = region.vars.iter().position(|v| v.name.as_bytes() == name)?;
            let value = percent_decode(value)?;
            match seen.iter_mut().find(|(i, _)| *i == index) {
                Some((_, values)) if region.vars[index].explode => values.push(value),
                Some(_) => return None, // repeated parameter
                None => seen.push((index, vec![value])),
            }
        }
        // Report in template order.
        seen.sort_by_key(|(i, _)| *i);
        for (index, values) in seen {
            let var = &region.vars[index];
            set(out, var, values.join(","))?;
        }
        return Some(());
    }
    if region.whole() {
        return set(out, &region.vars[0], percent_decode(content)?);
    }
    let items: Vec<&[u8]> = content.split(|&b| b == sep).collect();
    // Surplus items (only possible with an exploded variable) all go to the
    // first exploded variable.
    let mut extra = items.len().saturating_sub(region.vars.len());
    let mut next = 0;
    for var in &region.vars {
        let Some(&item) = items.get(next) else {
            break;
        };
        if var.explode && extra > 0 {
            let mut joined = Vec::new();
            for part in &items[next..=next + extra] {
                joined.push(percent_decode(part)?);
            }
            next += extra + 1;
            extra = 0;
            set(out, var, joined.join(&char::from(sep).to_string()))?;
        } else {
            next += 1;
            set(out, var, percent_decode(item)?)?;
        }
    }
    Some(())
}

/// Record `value` for `var`, checking its prefix length and that a variable
/// used twice has the same value each time.
pub(super) fn set(out: &mut Vec<(String, String)>, var: &VarSpec, value: String) -> Option<()> {
    if let Some(n) = var.prefix
        && value.chars().count() > usize::from(n)
    {
        return None;
    }
    match out.iter().find(|(k, _)| *k == var.name) {
        Some((_, existing)) if *existing == value => Some(()),
        Some(_) => None,
        None => {
            out.push((var.name.clone(), value));
            Some(())
        }
    }
}

pub(super) fn percent_decode(raw: &[u8]) -> Option<String> {
    pub(super) fn hex(b: u8) -> Option<u8> {
        match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            b'A'..=b'F' => Some(b - b'A' + 10),
            _ => None,
        }
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            let hi = hex(*raw.get(i + 1)?)?;
            let lo = hex(*raw.get(i + 2)?)?;
            out.push((hi << 4) | lo);
            i += 3;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
