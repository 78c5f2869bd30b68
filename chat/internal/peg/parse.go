package peg

// InvalidUTF8 is a run of input bytes that does not decode as UTF-8.
type InvalidUTF8 struct{ Pos, Len int }

// Node is an AST node (common_peg_ast_node): made by a rule (Rule set) or a tag (Tag set) for the span
// [Start, End) of the input, with its children and the invalid UTF-8 runs inside it.
type Node struct {
	Rule, Tag  string
	Start, End int
	Text       string
	Children   []int
	Partial    bool
	Invalid    []InvalidUTF8
}

// SanitizedText is the text with every invalid run replaced by U+FFFD.
func (n *Node) SanitizedText() string {
	if len(n.Invalid) == 0 {
		return n.Text
	}
	out := make([]byte, 0, len(n.Text)+2*len(n.Invalid))
	seg := n.Start
	for _, inv := range n.Invalid {
		out = append(out, n.Text[seg-n.Start:inv.Pos-n.Start]...)
		out = append(out, "\xEF\xBF\xBD"...)
		seg = inv.Pos + inv.Len
	}
	out = append(out, n.Text[seg-n.Start:n.End-n.Start]...)
	return string(out)
}

// Context is a parse's input, mode and AST (common_peg_parse_context).
type Context struct {
	Input   string
	Lenient bool // partial input: running out of input asks for more instead of failing
	AST     []Node
}

// Result is a parse result: its status, the span, the AST nodes it made and the invalid UTF-8 it consumed.
type Result struct {
	Status     Status
	Start, End int
	Nodes      []int
	Invalid    []InvalidUTF8
}

func res(s Status, start, end int) Result { return Result{Status: s, Start: start, End: end} }

func (c *Context) addNode(rule, tag string, r *Result) int {
	text := ""
	if r.Start < len(c.Input) {
		text = c.Input[r.Start:r.End]
	}
	c.AST = append(c.AST, Node{Rule: rule, Tag: tag, Start: r.Start, End: r.End, Text: text, Children: r.Nodes,
		Partial: r.Status == NeedMore, Invalid: append([]InvalidUTF8(nil), r.Invalid...)})
	return len(c.AST) - 1
}

// Visit calls fn for the nodes of r and their descendants, depth first.
func (c *Context) Visit(r Result, fn func(n *Node)) {
	for _, id := range r.Nodes {
		c.visit(id, fn)
	}
}

func (c *Context) visit(id int, fn func(n *Node)) {
	n := &c.AST[id]
	fn(n)
	for _, ch := range n.Children {
		c.visit(ch, fn)
	}
}

// FindByTag is find_by_tag: the first child (depth first, to maxDepth levels) with the tag, or -1.
func (c *Context) FindByTag(parent *Node, tag string, maxDepth int) int {
	for _, id := range parent.Children {
		ch := &c.AST[id]
		if ch.Tag == tag {
			return id
		}
		if maxDepth > 1 {
			if r := c.FindByTag(ch, tag, maxDepth-1); r >= 0 {
				return r
			}
		}
	}
	return -1
}

// Parse runs the root parser from start (common_peg_arena::parse).
func (a *Arena) Parse(c *Context, start int) Result {
	if a.root == Invalid {
		panic("No root parser set")
	}
	return a.parse(a.root, c, start)
}

func isSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

// parse is the parser_executor for one parser.
func (a *Arena) parse(id ID, c *Context, start int) Result {
	p := &a.parsers[id]
	in := c.Input
	switch p.kind {
	case KEpsilon:
		return res(Success, start, start)
	case KStart:
		if start == 0 {
			return res(Success, start, start)
		}
		return res(Fail, start, start)
	case KEnd:
		if start >= len(in) {
			return res(Success, start, start)
		}
		return res(Fail, start, start)
	case KLiteral:
		pos := start
		for i := 0; i < len(p.text); i++ {
			if pos >= len(in) {
				if !c.Lenient {
					return res(Fail, start, start)
				}
				return res(NeedMore, start, pos)
			}
			if in[pos] != p.text[i] {
				return res(Fail, start, start)
			}
			pos++
		}
		return res(Success, start, pos)
	case KSequence:
		pos := start
		var nodes []int
		var inv []InvalidUTF8
		for _, ch := range p.children {
			r := a.parse(ch, c, pos)
			if r.Status == Fail {
				return res(Fail, start, r.End)
			}
			nodes = append(nodes, r.Nodes...)
			inv = append(inv, r.Invalid...)
			if r.Status == NeedMore {
				return Result{Status: NeedMore, Start: start, End: r.End, Nodes: nodes, Invalid: inv}
			}
			pos = r.End
		}
		return Result{Status: Success, Start: start, End: pos, Nodes: nodes, Invalid: inv}
	case KChoice:
		for _, ch := range p.children {
			if r := a.parse(ch, c, start); r.Status != Fail {
				return r
			}
		}
		return res(Fail, start, start)
	case KRepetition:
		pos, count := start, 0
		var nodes []int
		var inv []InvalidUTF8
		for p.max == -1 || count < p.max {
			if pos >= len(in) {
				break
			}
			r := a.parse(p.child, c, pos)
			if r.Status == Success {
				if r.End == pos {
					break
				}
				nodes = append(nodes, r.Nodes...)
				inv = append(inv, r.Invalid...)
				pos = r.End
				count++
				continue
			}
			if r.Status == NeedMore {
				nodes = append(nodes, r.Nodes...)
				inv = append(inv, r.Invalid...)
				return Result{Status: NeedMore, Start: start, End: r.End, Nodes: nodes, Invalid: inv}
			}
			break
		}
		if p.min > 0 && count < p.min {
			if pos >= len(in) && c.Lenient {
				return Result{Status: NeedMore, Start: start, End: pos, Nodes: nodes, Invalid: inv}
			}
			return res(Fail, start, pos)
		}
		return Result{Status: Success, Start: start, End: pos, Nodes: nodes, Invalid: inv}
	case KAnd:
		r := a.parse(p.child, c, start)
		return res(r.Status, start, start)
	case KNot:
		r := a.parse(p.child, c, start)
		switch r.Status {
		case Success:
			return res(Fail, start, start)
		case NeedMore:
			return res(NeedMore, start, start)
		}
		return res(Success, start, start)
	case KAny:
		u := decodeUTF8(in, start)
		switch u.status {
		case utf8Incomplete:
			if !c.Lenient {
				return res(Fail, start, start)
			}
			return res(NeedMore, start, start)
		case utf8Invalid:
			return res(Fail, start, start)
		}
		return res(Success, start, start+u.n)
	case KSpace:
		pos := start
		for pos < len(in) && isSpace(in[pos]) {
			pos++
		}
		return res(Success, start, pos)
	case KChars:
		return a.parseChars(p, c, start)
	case KString:
		return parseString(p.delim, c, start)
	case KUntil:
		return parseUntil(p.trie, c, start)
	case KSchema, KGBNF, KAC:
		return a.parse(p.child, c, start)
	case KRule, KTag:
		r := a.parse(p.child, c, start)
		if r.Status == Fail {
			return r
		}
		rule, tag := p.text, ""
		if p.kind == KTag {
			rule, tag = "", p.text
		}
		nid := c.addNode(rule, tag, &r)
		return Result{Status: r.Status, Start: r.Start, End: r.End, Nodes: []int{nid}, Invalid: r.Invalid}
	case KRef:
		rid, err := a.rule(p.text)
		if err != nil {
			panic(err)
		}
		return a.parse(rid, c, start)
	case KAtomic:
		r := a.parse(p.child, c, start)
		if r.Status == NeedMore {
			r.Nodes = nil
		}
		return r
	}
	panic("peg: unknown parser kind")
}

func (a *Arena) parseChars(p *parser, c *Context, start int) Result {
	in := c.Input
	pos, count := start, 0
	for p.max == -1 || count < p.max {
		u := decodeUTF8(in, pos)
		if u.status == utf8Incomplete {
			if count >= p.min {
				return res(Success, start, pos)
			}
			if !c.Lenient {
				return res(Fail, start, start)
			}
			return res(NeedMore, start, pos)
		}
		if u.status == utf8Invalid {
			if count >= p.min {
				return res(Success, start, pos)
			}
			return res(Fail, start, start)
		}
		match := false
		for _, r := range p.ranges {
			if u.cp >= r.lo && u.cp <= r.hi {
				match = true
				break
			}
		}
		if p.negated {
			match = !match
		}
		if !match {
			break
		}
		pos += u.n
		count++
	}
	if count < p.min {
		if pos >= len(in) && c.Lenient {
			return res(NeedMore, start, pos)
		}
		return res(Fail, start, pos)
	}
	return res(Success, start, pos)
}

func isHexDigit(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// parseString is the string parser: JSON string content up to the delimiter (not consumed).
func parseString(delim byte, c *Context, start int) Result {
	in := c.Input
	pos := start
	for pos < len(in) {
		ch := in[pos]
		if ch == delim {
			return res(Success, start, pos)
		}
		if ch == '\\' {
			save := pos
			pos++
			if pos >= len(in) {
				if !c.Lenient {
					return res(Fail, start, start)
				}
				return res(NeedMore, start, save)
			}
			e := in[pos]
			switch {
			case e == delim || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't':
				pos++
			case e == 'u':
				pos++
				for range 4 {
					if pos >= len(in) {
						if !c.Lenient {
							return res(Fail, start, start)
						}
						return res(NeedMore, start, save)
					}
					if !isHexDigit(in[pos]) {
						return res(Fail, start, start)
					}
					pos++
				}
			default:
				return res(Fail, start, start)
			}
			continue
		}
		u := decodeUTF8(in, pos)
		if u.status == utf8Incomplete {
			if !c.Lenient {
				return res(Fail, start, start)
			}
			return res(NeedMore, start, pos)
		}
		if u.status == utf8Invalid {
			return res(Fail, start, start)
		}
		pos += u.n
	}
	if !c.Lenient {
		return res(Fail, start, pos)
	}
	return res(NeedMore, start, pos)
}

// parseUntil is the until parser: everything before the first delimiter (or a delimiter's prefix reaching the end
// of the input); invalid UTF-8 is consumed and recorded.
func parseUntil(t *trie, c *Context, start int) Result {
	in := c.Input
	pos, lastValid := start, start
	var inv []InvalidUTF8
	for pos < len(in) {
		u := decodeUTF8(in, pos)
		if u.status == utf8Incomplete && c.Lenient {
			return Result{Status: NeedMore, Start: start, End: lastValid, Invalid: inv}
		}
		if u.status != utf8Success {
			inv = append(inv, InvalidUTF8{pos, u.n})
			pos += u.n
			lastValid = pos
			continue
		}
		if m := t.checkAt(in, pos); m == completeMatch || m == partialMatch {
			return Result{Status: Success, Start: start, End: pos, Invalid: inv}
		}
		pos += u.n
		lastValid = pos
	}
	if lastValid == len(in) && c.Lenient {
		return Result{Status: NeedMore, Start: start, End: lastValid, Invalid: inv}
	}
	return Result{Status: Success, Start: start, End: lastValid, Invalid: inv}
}
