package engine

import (
	"bytes"

	"github.com/bankml/bankml/model"
)

// promptCache is llama-server's host-memory prompt cache (--cache-ram,
// server_prompt_cache in tools/server/server-task.cpp): the states of
// prompts a slot held before it was given to another prompt, oldest first,
// each the slot's whole cache (model.Context.WriteState: tokens, cell
// classes, cells). A request given a slot by least-recent use, or a slot
// that keeps under half of its tokens for it (get_available_slot's f_keep
// < 0.5), saves the slot's state here and loads the cached state that keeps
// the most of its prompt. The scheduler owns it.
type promptCache struct {
	limit       int64 // bytes; 0: no limit
	limitTokens int   // tokens; 0: no limit
	modelID     string
	states      []cacheState
}

// cacheState is one cached prompt.
type cacheState struct {
	tokens []int32
	data   []byte
}

func (p *promptCache) size() int64 {
	var n int64
	for _, s := range p.states {
		n += int64(len(s.data))
	}
	return n
}

func (p *promptCache) nTokens() int {
	n := 0
	for _, s := range p.states {
		n += len(s.tokens)
	}
	return n
}

// save is server_slot::prompt_save with server_prompt_cache::alloc: nothing
// for an empty cache, a prompt the cache already holds whole, or a state
// larger than the limit; otherwise the cached prompts it holds whole are
// dropped, the oldest dropped until it fits, and its state appended.
func (p *promptCache) save(c *model.Context) {
	toks := c.Tokens()
	if len(toks) == 0 {
		return
	}
	for _, s := range p.states {
		if commonPrefix(s.tokens, toks) == len(toks) {
			return
		}
	}
	var b bytes.Buffer
	if _, err := c.WriteState(&b, p.modelID); err != nil {
		return
	}
	size := int64(b.Len())
	if p.limit > 0 && size > p.limit {
		return
	}
	kept := p.states[:0]
	for _, s := range p.states {
		if commonPrefix(s.tokens, toks) != len(s.tokens) {
			kept = append(kept, s)
		}
	}
	clear(p.states[len(kept):])
	p.states = kept
	for p.limit > 0 && len(p.states) > 0 && p.size()+size > p.limit {
		p.states = p.states[1:]
	}
	p.states = append(p.states, cacheState{tokens: toks, data: b.Bytes()})
}

// load is server_prompt_cache::load: the cached prompt whose common prefix
// with prompt is at least a quarter of its own length and keeps both a
// larger share of it (f_keep) and of prompt (f_sim) than the slot's own
// cache does (an empty slot: any) replaces the slot's cache and leaves the
// cache. It reports false when that state could not be read (the slot is
// then to be emptied, as llama-server clears it).
func (p *promptCache) load(c *model.Context, prompt []int32) bool {
	cur := c.Tokens()
	lcp := commonPrefix(cur, prompt)
	keepBest := float32(-1)
	if len(cur) > 0 {
		keepBest = float32(lcp) / float32(len(cur))
	}
	simBest := float32(lcp) / float32(len(prompt))
	best := -1
	for i, s := range p.states {
		l := commonPrefix(s.tokens, prompt)
		keep, sim := float32(l)/float32(len(s.tokens)), float32(l)/float32(len(prompt))
		if keep < 0.25 {
			continue
		}
		if keepBest < keep && simBest < sim {
			keepBest, simBest, best = keep, sim, i
		}
	}
	if best < 0 {
		return true
	}
	s := p.states[best]
	p.states = append(p.states[:best], p.states[best+1:]...)
	_, err := c.ReadState(bytes.NewReader(s.data), p.modelID)
	return err == nil
}

// update is server_prompt_cache::update: the oldest states dropped while
// the cache is over its byte limit, then while it holds more tokens than
// its token limit (raised to what the byte limit holds at the cache's
// average bytes per token).
func (p *promptCache) update() {
	for p.limit > 0 && len(p.states) > 0 && p.size() > p.limit {
		p.states = p.states[1:]
	}
	perToken := max(1, float64(p.size())/float64(max(1, p.nTokens())))
	limitTokens := p.limitTokens
	if p.limit > 0 {
		limitTokens = max(p.limitTokens, int(float64(p.limit)/perToken))
	}
	for p.limitTokens > 0 && len(p.states) > 0 && p.nTokens() > limitTokens {
		p.states = p.states[1:]
	}
}
