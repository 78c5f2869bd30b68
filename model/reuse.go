package model

import "github.com/bankml/bankml/quant"

// freshClass is the class of position pos in the evaluation of a prompt
// of n tokens from position origin in micro-batches of NUbatch (pos >=
// origin, pos < n): its micro-batch's size and its row in it.
func freshClass(pos, origin, n int) quant.ColClass {
	b := (pos - origin) / NUbatch * NUbatch
	return quant.ColClass{N: int32(min(NUbatch, n-origin-b)), Index: int32(pos - origin - b)}
}

// ExactPrefix returns how many leading tokens of prompt the cache can keep
// so that every kept cell is, bit for bit, the cell a fresh evaluation of
// prompt computes (from position 0, in micro-batches of NUbatch, as
// llama-server evaluates a prompt in an empty slot): the longest common
// prefix of the cached tokens and prompt whose cells were computed with the
// class (micro-batch size and row, as far as they change the arithmetic:
// the attention kernel, tinyBLAS, the Q4_K gemm) that the fresh evaluation
// gives them, less one when that is the whole prompt (at least one token is
// evaluated, so that the prompt's last logits exist). Evaluating the rest
// with PromptSpans(c, prompt, kept, len(prompt), 0, true) then gives the
// fresh evaluation's logits and cells. A cell's values depend on the cells
// before it, so the prefix ends at the first cell that differs.
func (c *Context) ExactPrefix(prompt []int32) int {
	n := 0
	for n < len(c.tokens) && n < len(prompt) && c.tokens[n] == prompt[n] &&
		c.sigs[n] == c.r.cellSig(c, freshClass(n, 0, len(prompt)), n) {
		n++
	}
	if n == len(prompt) && n > 0 {
		n--
	}
	return n
}

// settledClass is the class a settled cell has: its row in a full
// micro-batch of NUbatch (what a fresh evaluation of any prompt that
// reaches NUbatch positions past it computes; a prompt whose last
// micro-batch holds 64 rows or more computes the same attention).
func settledClass(pos int) quant.ColClass {
	return quant.ColClass{N: NUbatch, Index: int32(pos % NUbatch)}
}

// Unsettled returns the first cached position whose cell is not the one a
// fresh evaluation of a longer prompt computes there (see SettleSpans),
// NPast() when every cell is: a turn's generated tokens (computed one row at
// a time) and short prompts (under 64 rows: the one-row attention kernel)
// are unsettled. Re-evaluating positions Unsettled().. with SettleSpans lets
// the next turn of a conversation reuse them (ExactPrefix).
func (c *Context) Unsettled() int {
	for i, s := range c.sigs {
		if s != c.r.cellSig(c, settledClass(i), i) {
			return i
		}
	}
	return len(c.sigs)
}

// PromptSpans cuts prompt[from:to] (to be evaluated at positions from..to-1
// of c, which holds from positions) into the spans that give each row its
// class in the evaluation of the whole prompt from position origin in
// micro-batches of NUbatch (origin 0: a fresh evaluation; origin = the
// cached prefix: llama-server's evaluation after it), one span per
// micro-batch, with the prompt's last token the output when lastOut. The
// rows may then be evaluated in any number of Runner.Decode calls, alone or
// beside other sequences' spans, in position order.
func PromptSpans(c *Context, prompt []int32, from, to, origin int, lastOut bool) []Span {
	var spans []Span
	for p := from; p < to; {
		cls := freshClass(p, origin, len(prompt))
		end := min(to, p+int(cls.N-cls.Index))
		s := Span{Ctx: c, Tokens: prompt[p:end], UBatch: int(cls.N), First: int(cls.Index)}
		if lastOut && p+int(cls.N-cls.Index) == len(prompt) {
			s.Outputs = 1
		}
		spans = append(spans, s)
		p = end
	}
	return spans
}

// SettleSpans cuts tokens (to be evaluated at positions from.. of c) into
// spans of settled rows: each a row of a full micro-batch of NUbatch, no
// outputs (see Unsettled).
func SettleSpans(c *Context, tokens []int32, from int) []Span {
	var spans []Span
	for i := 0; i < len(tokens); {
		cls := settledClass(from + i)
		end := min(len(tokens), i+int(cls.N-cls.Index))
		spans = append(spans, Span{Ctx: c, Tokens: tokens[i:end], UBatch: int(cls.N), First: int(cls.Index)})
		i = end
	}
	return spans
}
