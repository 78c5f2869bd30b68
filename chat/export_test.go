package chat

import (
	"strings"
	"time"
)

// PreparedContext returns the variables of a request's main render as JSON (the messages, tools and options as
// Apply gives them to the template), the same with every control-token text inside them replaced by as many DEL
// bytes (bos_token, eos_token, datetime and date_string left as they are), and whether the request continues its
// final message.
func PreparedContext(t *Template, in Inputs) (ctx, defanged string, continued bool, err error) {
	p, err := t.prepare(in)
	if err != nil {
		return "", "", false, err
	}
	c := p.r.context(p.r.messages, p.addGen)
	if ctx, err = c.dumpString(); err != nil {
		return "", "", false, err
	}
	d := c.clone()
	for i, k := range d.keys {
		switch k {
		case "bos_token", "eos_token", "datetime", "date_string":
			continue
		}
		defangNode(d.vals[i], func(s string) string {
			for _, m := range t.vocab.Control {
				s = strings.ReplaceAll(s, m, strings.Repeat("\x7f", len(m)))
			}
			return s
		})
	}
	defanged, err = d.dumpString()
	return ctx, defanged, p.cont != ContinueNone, err
}

// Render compiles a template and runs it on the variables of ctx (a JSON object), as Apply's renders do.
func Render(src, ctx string) (string, error) {
	p, err := compile(lexSource(src))
	if err != nil {
		return "", err
	}
	n, err := parseJSON([]byte(ctx))
	if err != nil {
		return "", err
	}
	if err := escapeSpaces(n); err != nil {
		return "", err
	}
	out, err := p.render(n, time.Now())
	return unescapeSpaces(out), err
}

// ParserJSON is the answer parser's arena as llama.cpp's common_peg_arena::to_json gives it.
func (p *Parser) ParserJSON() map[string]any {
	if p == nil || p.arena == nil {
		return nil
	}
	return p.arena.ToJSON()
}
