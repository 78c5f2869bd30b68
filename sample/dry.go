package sample

import (
	"fmt"
	"strings"

	"github.com/bankml/bankml/fmath"
)

// Vocab is what the DRY sampler needs from the model's vocabulary to turn
// its sequence-breaker strings into token sequences (llama_sampler_init_dry's
// get_overlapping_token_sequences).
type Vocab interface {
	// TokenText returns the text of one token as llama_vocab::detokenize({id},
	// special = true) does (remove_special false, unparse_special true).
	TokenText(id int32) string
	// Tokenize returns llama_vocab::tokenize(text, add_special = false,
	// parse_special = false).
	Tokenize(text string) []int32
}

// DRY's limits on sequence breakers (llama_sampler_init_dry).
const (
	dryMaxCharLen = 40
	dryMaxSeqLen  = 20
)

// dryBreakers maps a head token to the tails of the sequence breakers that
// start with it (an empty tail: the head alone is a breaker). llama.cpp keeps
// an unordered_multimap; every use below is independent of its order.
type dryBreakers map[int32][][]int32

// processDryBreakers is the breaker preprocessing of llama_sampler_init_dry:
// each non-empty breaker (cut to 40 bytes) becomes every token whose text
// contains it (tail empty) and, for every token whose text ends with a prefix
// of it, that token followed by the tokenization of the rest (cut to 20
// tokens).
func processDryBreakers(v Vocab, nVocab int, breakers []string) dryBreakers {
	out := dryBreakers{}
	texts := make([]string, nVocab)
	for id := range nVocab {
		texts[id] = v.TokenText(int32(id))
	}
	for _, b := range breakers {
		if b == "" {
			continue // llama.cpp warns "skipping null or empty DRY sequence breaker"
		}
		if len(b) > dryMaxCharLen {
			b = b[:dryMaxCharLen]
		}
		overlappingSequences(v, texts, b, out)
	}
	return out
}

// overlappingSequences is get_overlapping_token_sequences(vocab, str, ...,
// max_tail_len = 20).
func overlappingSequences(v Vocab, texts []string, str string, out dryBreakers) {
	for id, word := range texts {
		tok := int32(id)
		if strings.Contains(word, str) {
			out[tok] = append(out[tok], []int32{})
			continue
		}
		// Every position where word continues with a prefix of str up to its end.
		for pos := strings.IndexByte(word, str[0]); pos >= 0; {
			match := true
			i := 1
			for ; i < len(str) && i+pos < len(word); i++ {
				if word[pos+i] != str[i] {
					match = false
					break
				}
			}
			if match {
				tail := v.Tokenize(str[i:])
				if len(tail) > dryMaxSeqLen {
					tail = tail[:dryMaxSeqLen]
				}
				if !containsSeq(out[tok], tail) {
					out[tok] = append(out[tok], tail)
				}
			}
			next := strings.IndexByte(word[pos+1:], str[0])
			if next < 0 {
				break
			}
			pos += 1 + next
		}
	}
}

func containsSeq(seqs [][]int32, s []int32) bool {
	for _, x := range seqs {
		if len(x) == len(s) {
			eq := true
			for i := range x {
				if x[i] != s[i] {
					eq = false
					break
				}
			}
			if eq {
				return true
			}
		}
	}
	return false
}

// dry is llama_sampler_dry ("Don't Repeat Yourself", ported into llama.cpp
// from koboldcpp): tokens that would extend a repetition longer than
// allowed_length lose multiplier * base^(length - allowed_length).
type dry struct {
	multiplier, base float32
	allowedLength    int32
	lastN            int32
	breakers         dryBreakers
	repeatCount      []int
	maxTokenRepeat   map[int32]int
	last             ring
}

func newDry(p *Params, v Vocab, nVocab int) (*dry, error) {
	s := &dry{
		multiplier: p.DryMultiplier, base: p.DryBase, allowedLength: p.DryAllowedLength,
		lastN: p.DryPenaltyLastN, maxTokenRepeat: map[int32]int{},
		repeatCount: make([]int, p.DryPenaltyLastN), last: newRing(int(p.DryPenaltyLastN)),
	}
	if len(p.DrySequenceBreakers) > 0 {
		if v == nil {
			return nil, fmt.Errorf("sample: dry_sequence_breakers: DRY needs the model's vocabulary (Model.Vocab is nil)")
		}
		s.breakers = processDryBreakers(v, nVocab, p.DrySequenceBreakers)
	}
	return s, nil
}

func (s *dry) accept(tok int32) { s.last.push(tok) }

func (s *dry) reset() {
	s.last.clear()
	s.repeatCount = s.repeatCount[:0]
	clear(s.maxTokenRepeat)
}

func (s *dry) apply(c *candidates, _ *[]TokenData) {
	n := min(s.last.sz, int(s.lastN))
	allowed := int(s.allowedLength)
	if n <= allowed {
		return
	}
	s.repeatCount = append(s.repeatCount[:0], make([]int, n)...)
	clear(s.maxTokenRepeat)

	// Step 1: the latest restart sequence limits how far back a repetition
	// may reach.
	repLimit := n
	for i := 0; i < n; i++ {
		tails, ok := s.breakers[s.last.rat(i)]
		if !ok {
			continue
		}
		longest := -1
		for _, tail := range tails {
			if l := len(tail); l > longest && l <= i {
				match := true
				for off := 0; off < l; off++ {
					if tail[off] != s.last.rat(i-off-1) {
						match = false
						break
					}
				}
				if match {
					longest = l
				}
			}
		}
		if longest >= 0 {
			repLimit = i - longest
			break
		}
	}
	if repLimit < allowed {
		return
	}

	// Step 2: the reverse Z-algorithm: repeatCount[last-k] is the length of
	// the longest suffix of the history that also ends k tokens earlier.
	last := n - 1
	rt, lt := 0, 0
	for k := 1; k < n; k++ {
		if k > rt {
			m := 0
			for m+k < n && s.last.rat(m) == s.last.rat(m+k) {
				m++
			}
			s.repeatCount[last-k] = min(m, repLimit)
			if m > 0 {
				lt, rt = k, k+m-1
			}
		} else {
			p := k - lt
			right := rt - k + 1
			if s.repeatCount[last-p] < right {
				s.repeatCount[last-k] = min(s.repeatCount[last-p], repLimit)
			} else {
				i := rt + 1
				for i < n && s.last.rat(i) == s.last.rat(i-k) {
					i++
				}
				s.repeatCount[last-k] = min(i-k, repLimit)
				lt, rt = k, i-1
			}
		}
	}

	// Step 3: the token after each repeat would extend it.
	for i := 0; i < n-1; i++ {
		l := s.repeatCount[i]
		if l >= allowed {
			tok := s.last.rat(n - 2 - i)
			if cur, ok := s.maxTokenRepeat[tok]; !ok || cur < l {
				s.maxTokenRepeat[tok] = l
			}
		}
	}

	// Step 4: penalise, with the exponent clamped so that base^exp stays
	// below FLT_MAX.
	const floatMaxLog = float32(88.7228391)
	maxExp := int32(0)
	if s.base > 1.000001 {
		maxExp = cvttss2si(floatMaxLog / fmath.Logf(s.base))
	}
	for i := range c.data {
		l, ok := s.maxTokenRepeat[c.data[i].ID]
		if !ok {
			continue
		}
		single := false
		for _, tail := range s.breakers[c.data[i].ID] {
			if len(tail) == 0 {
				single = true
				break
			}
		}
		if single {
			continue
		}
		exp := int32(l) - s.allowedLength
		if maxExp > 0 && exp > maxExp {
			exp = maxExp
		}
		penalty := float32(float64(s.multiplier) * fmath.Pow(float64(s.base), float64(exp)))
		c.data[i].Logit -= penalty
	}
	c.sorted = false
}
