package grammar

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/bankml/bankml/internal/reference"
)

// The mask oracle: bankml's Grammar and the reference's grammar sampler are
// fed the same tokens, and before every token both compute the mask over the
// whole vocabulary (llama_sampler_apply on every token id): the same tokens
// must be allowed (compared exactly; the count and a sha256 of the allowed
// ids are logged), the same token must be the first one refused, and accept
// must fail alike. Each input text is fed as the tokenizer splits it and one
// byte per token; every grammar is also walked along tokens drawn at random
// from its masks. BANKML_ORACLE_HEAVY=1 walks further.

// maskStats counts what the oracle compared.
type maskStats struct {
	masks, rejections, accepts, singles int
}

// maskRun feeds toks to both grammars, comparing the mask before each one;
// it returns how many tokens were taken before the first refused one.
func maskRun(t *testing.T, vm *vocabModel, g *Grammar, rg *reference.RefGrammar, toks []int32, st *maskStats) int {
	t.Helper()
	all := make([]int32, vm.v.NVocab())
	for i := range all {
		all[i] = int32(i)
	}
	for i, tok := range toks {
		compareMask(t, vm, g, rg, all, fmt.Sprintf("before token %d (%d)", i, tok), st)
		// the single-candidate check common_sampler_sample makes first
		want := rg.Apply([]int32{tok})[0]
		if got := g.Allows(tok); got != want {
			t.Fatalf("token %d (%d %q): Allows %v, the reference %v", i, tok, vm.tok.TokenToPiece(tok, true), got, want)
		}
		st.singles++
		if !want {
			st.rejections++
			return i
		}
		if vm.tok.IsEOG(tok) {
			return i
		}
		werr := rg.Accept(tok)
		gerr := g.Accept(tok)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("token %d (%d %q): Accept %v, the reference %v", i, tok, vm.tok.TokenToPiece(tok, true), gerr, werr)
		}
		if werr != nil {
			if gerr.(*AcceptError).Msg != werr.Error() {
				t.Fatalf("token %d: Accept error %q, the reference's %q", i, gerr.(*AcceptError).Msg, werr.Error())
			}
			return i
		}
		st.accepts++
	}
	compareMask(t, vm, g, rg, all, "at the end", st)
	return len(toks)
}

func compareMask(t *testing.T, vm *vocabModel, g *Grammar, rg *reference.RefGrammar, all []int32, where string, st *maskStats) {
	t.Helper()
	want := rg.Apply(all)
	m := g.Mask()
	var wantIDs, gotIDs []int32
	for id, ok := range want {
		if ok {
			wantIDs = append(wantIDs, int32(id))
		}
		if m.Allowed(int32(id)) {
			gotIDs = append(gotIDs, int32(id))
		}
	}
	if !slices.Equal(gotIDs, wantIDs) {
		var extra, missing []string
		for _, id := range gotIDs {
			if !want[id] && len(extra) < 8 {
				extra = append(extra, fmt.Sprintf("%d %q", id, vm.tok.TokenToPiece(id, true)))
			}
		}
		for _, id := range wantIDs {
			if !m.Allowed(id) && len(missing) < 8 {
				missing = append(missing, fmt.Sprintf("%d %q", id, vm.tok.TokenToPiece(id, true)))
			}
		}
		t.Fatalf("mask %s: %d tokens (sha256 %s), the reference %d (sha256 %s); allowed only here: %v; only there: %v",
			where, len(gotIDs), idsHash(gotIDs), len(wantIDs), idsHash(wantIDs), extra, missing)
	}
	if m.Count() != len(wantIDs) {
		t.Fatalf("mask %s: Count %d, %d allowed", where, m.Count(), len(wantIDs))
	}
	st.masks++
}

func idsHash(ids []int32) string {
	h := sha256.New()
	for _, id := range ids {
		binary.Write(h, binary.LittleEndian, id)
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:8])
}

// byteTokens maps each byte to a token whose piece is exactly that byte.
func byteTokens(vm *vocabModel) map[byte]int32 {
	out := map[byte]int32{}
	for id := range vm.tok.NVocab() {
		p := vm.tok.TokenToPiece(int32(id), true)
		if len(p) == 1 {
			if _, ok := out[p[0]]; !ok {
				out[p[0]] = int32(id)
			}
		}
	}
	return out
}

type maskGrammar struct {
	name, text string
	inputs     []string
}

// maskGrammars are llama.cpp's grammars (with inputs written for them), the
// JSON-mode grammar (the converter's grammar for {"type": "object"}), the
// grammar of grammars/json.gbnf, and ownGrammars.
func maskGrammars(t *testing.T, qwen3 bool) []maskGrammar {
	named := llamaGrammars(t)
	inputs := map[string][]string{
		"arithmetic": {"(1+2)*3-4/5", "12 * (3 + 4)", "1+", "1++2", "x=1"},
		"c":          {"int main() {\n  int x = 1;\n  return x;\n}\n", "int f(int a) { return a*2; }", "int 3x;"},
		"chess":      {"1. e4 e5 2. Nf3 Nc6 3. Bb5 a6\n", "1. d4 d5 2. c4 ", "1. Zz9"},
		"english":    {"Hello, world. This is English!", "Über café", "tab\there"},
		"japanese":   {"これは日本語の文です。", "カタカナとひらがな", "漢字", "abc"},
		"json":       {`{"a": [1, 2.5e-3, true, null], "b": {"c": "d\n\u00e9"}}`, `{"x": "unterminated`, `[1, 2]`, `{"k":}`},
		"json_arr":   {`[{"a": 1}, {"b": "中文"}]`, `[]`, `[1`, `{}`},
		"list":       {"- first item\n- second item\n", "- only\n", "* wrong\n"},
	}
	var out []maskGrammar
	for _, n := range slices.Sorted(maps.Keys(named)) {
		out = append(out, maskGrammar{"grammars/" + n + ".gbnf", named[n], inputs[n]})
	}
	jsonMode, err := FromJSONSchema([]byte(`{"type": "object"}`), true)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, maskGrammar{"JSON mode", jsonMode, []string{
		`{"name": "Ada", "tags": ["x", "y"], "n": -12.5e+3, "ok": false, "nil": null}`,
		"{\n  \"nested\": {\"deep\": [[], {}]},\n  \"esc\": \"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\"\n}",
		`{"unicode": "日本語 😀"}`, `{"a": 01}`, `[]`, `{"a" 1}`, `  {}`}})
	for _, g := range ownGrammars {
		if g.qwen3 && !qwen3 {
			continue
		}
		out = append(out, maskGrammar{g.name, g.text, g.inputs})
	}
	return out
}

// TestMasksMatchTheReference is the mask oracle (see the top of the file).
func TestMasksMatchTheReference(t *testing.T) {
	lib, shim := shimFor(t)
	heavy := os.Getenv("BANKML_ORACLE_HEAVY") != ""
	var st maskStats
	for _, vm := range vocabs(t, lib) {
		bytes := byteTokens(vm)
		walkSteps := 12
		if vm.tok.NVocab() < 1000 || heavy {
			walkSteps = 60
		}
		for _, mg := range maskGrammars(t, vm.name == "qwen3") {
			t.Run(vm.name+"/"+mg.name, func(t *testing.T) {
				newPair := func() (*Grammar, *reference.RefGrammar) {
					g, err := New(mg.text, vm.v, Options{})
					if err != nil {
						t.Fatal(err)
					}
					rg, msg := shim.NewGrammar(vm.ref, mg.text, "root", false, nil, nil)
					if rg == nil {
						t.Fatalf("the reference refuses the grammar: %s", msg)
					}
					t.Cleanup(rg.Free)
					return g, rg
				}
				for _, in := range mg.inputs {
					g, rg := newPair()
					maskRun(t, vm, g, rg, vm.tok.Tokenize(in, false, true), &st)
					if vm.tok.NVocab() > 1000 && len(in) > 40 && !heavy {
						continue // one byte per token over 151,936 tokens: the long inputs only when heavy
					}
					var perByte []int32
					for i := 0; i < len(in); i++ {
						tok, ok := bytes[in[i]]
						if !ok {
							t.Fatalf("no token for byte %#x", in[i])
						}
						perByte = append(perByte, tok)
					}
					g, rg = newPair()
					maskRun(t, vm, g, rg, perByte, &st)
				}
				// a random walk along allowed tokens
				g, rg := newPair()
				all := make([]int32, vm.tok.NVocab())
				for i := range all {
					all[i] = int32(i)
				}
				rng := rand.New(rand.NewPCG(uint64(len(mg.text)), 7))
				for step := range walkSteps {
					compareMask(t, vm, g, rg, all, fmt.Sprintf("walk step %d", step), &st)
					m := g.Mask()
					var allowed []int32
					for id := range vm.tok.NVocab() {
						if m.Allowed(int32(id)) && !vm.tok.IsEOG(int32(id)) {
							allowed = append(allowed, int32(id))
						}
					}
					if len(allowed) == 0 {
						break
					}
					tok := allowed[rng.IntN(len(allowed))]
					werr, gerr := rg.Accept(tok), g.Accept(tok)
					if (werr == nil) != (gerr == nil) {
						t.Fatalf("walk step %d token %d %q: Accept %v, the reference %v", step, tok, vm.tok.TokenToPiece(tok, true), gerr, werr)
					}
					if werr != nil {
						break
					}
					st.accepts++
				}
			})
		}
	}
	t.Logf("masks: %d of %d masks over the whole vocabulary equal to llama_sampler_apply's (%d single-token checks, %d accepts, %d rejection points)",
		st.masks, st.masks, st.singles, st.accepts, st.rejections)
}
