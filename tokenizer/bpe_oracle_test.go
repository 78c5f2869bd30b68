package tokenizer

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/testdata"
)

// qwen3File is the synthetic Qwen3 model with the real Qwen3 vocabulary that the oracle tests share: written once
// per test binary into a temporary folder (removed by TestMain).
var qwen3File struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if qwen3File.dir != "" {
		os.RemoveAll(qwen3File.dir)
	}
	os.Exit(code)
}

// qwen3Model returns the path of a tiny qwen3 model (tied embeddings, Q4_0 token_embd) carrying the real Qwen3
// vocabulary converted by internal/synth from ../shared/models/qwen3, as `bankml synth --arch qwen3 --preset tiny
// --vocab qwen3 --tied` writes it.
func qwen3Model(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(modelsDir(t), "qwen3")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json.gz")); err != nil {
		testdata.Absent(t, "Qwen3 tokenizer absent: %v", err)
	}
	qwen3File.once.Do(func() {
		v, err := synth.Qwen3Vocab(dir, synth.Qwen3NVocab)
		if err != nil {
			qwen3File.err = err
			return
		}
		shape, err := synth.Preset("tiny")
		if err != nil {
			qwen3File.err = err
			return
		}
		shape.Tied = true
		tmp, err := os.MkdirTemp("", "bankml-tokenizer-")
		if err != nil {
			qwen3File.err = err
			return
		}
		qwen3File.dir = tmp
		qwen3File.path = filepath.Join(tmp, "qwen3-tiny-qwen3vocab.gguf")
		cfg := synth.Config{Arch: synth.ArchQwen3, Shape: shape, Weight: gguf.F32, Embd: gguf.Q4_0, Vocab: v, Seed: 1}
		_, qwen3File.err = synth.WriteFile(qwen3File.path, cfg)
	})
	if qwen3File.err != nil {
		t.Fatalf("synthetic qwen3 model: %v", qwen3File.err)
	}
	return qwen3File.path
}

// oracleVocab is one vocabulary the oracle tests run on.
type oracleVocab struct {
	name, path string
}

// oracleVocabs lists every vocabulary GGUF in ../shared/models/vocab and the synthetic Qwen3 model.
func oracleVocabs(t *testing.T) []oracleVocab {
	var out []oracleVocab
	for _, n := range vocabGGUFs(t) {
		out = append(out, oracleVocab{n, filepath.Join(modelsDir(t), "vocab", n)})
	}
	return append(out, oracleVocab{"synthetic qwen3 (real Qwen3 vocabulary)", qwen3Model(t)})
}

func loadRefVocab(t *testing.T, lib *reference.Lib, path string) *reference.Model {
	t.Helper()
	m, err := lib.LoadVocab(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// TestQwen2VectorsOnSyntheticQwen3 tokenizes llama.cpp's qwen2 test vectors (whose GGUF is not kept) with bankml
// and with the reference on the same synthetic Qwen3 model carrying the real Qwen3 vocabulary (pre-tokenizer
// qwen2), as tests/test-tokenizer-0 does (add_special false, parse_special false), and reports how many also equal
// the .out file (made with Qwen2's vocabulary, which Qwen3's extends).
func TestQwen2VectorsOnSyntheticQwen3(t *testing.T) {
	lib := loadReference(t)
	path := qwen3Model(t)
	texts, wants := readVectors(t, filepath.Join(modelsDir(t), "vocab", "ggml-vocab-qwen2.gguf"))
	tok := loadAnyTokenizer(t, path)
	if b, ok := tok.(*BPE); !ok || b.PreTokenizer() != "QWEN2" {
		t.Fatalf("tokenizer %T, want a *BPE with the QWEN2 pre-tokenizer", tok)
	}
	m := loadRefVocab(t, lib, path)
	same, sameOut := 0, 0
	for i, text := range texts {
		want, err := m.Tokenize(text, false, false)
		if err != nil {
			t.Fatal(err)
		}
		got := tok.Tokenize(text, false, false)
		if !slices.Equal(got, want) {
			t.Errorf("case %d %q:\n got %v\nwant %v", i, text, got, want)
		} else {
			same++
		}
		if slices.Equal(got, wants[i]) {
			sameOut++
		}
	}
	t.Logf("qwen2 vectors on the synthetic Qwen3 model: %d of %d identical to the reference; %d of %d equal ggml-vocab-qwen2.gguf.out",
		same, len(texts), sameOut, len(texts))

	// Qwen3's <think> markers are user-defined: split out even without parse_special, unlike <|im_start|>.
	think := tok.(*BPE).TextToToken("<think>")
	if attr, _ := m.TokenAttr(think); think == None || tok.TokenAttr(think) != AttrUserDefined || uint32(AttrUserDefined) != attr {
		t.Errorf("<think> = %d with attr %#x (reference %#x), want a user-defined token", think, tok.TokenAttr(think), attr)
	}
	for _, parse := range []bool{false, true} {
		text := "a<think>b</think><|im_start|>"
		want, _ := m.Tokenize(text, false, parse)
		got := tok.Tokenize(text, false, parse)
		if !slices.Equal(got, want) || !slices.Contains(got, think) {
			t.Errorf("parse=%v %q: %v, reference %v (must hold <think> %d)", parse, text, got, want, think)
		}
	}
}

// TestDecoderStreamsTheReferenceText feeds the fuzz corpus's tokens one by one to a Decoder on the Qwen3 vocabulary
// (no clean-up of spaces, no space prefix, so the stream is the concatenation of pieces) and checks that every
// chunk ends on a character boundary unless the bytes can never complete one, and that the whole stream equals
// llama_detokenize(ids, remove_special = false, unparse_special).
func TestDecoderStreamsTheReferenceText(t *testing.T) {
	lib := loadReference(t)
	path := qwen3Model(t)
	tok := loadAnyTokenizer(t, path)
	m := loadRefVocab(t, lib, path)
	same, n := 0, 0
	for _, text := range fuzzCorpus(500) {
		ids, err := m.Tokenize(text, false, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, special := range []bool{false, true} {
			n++
			want, err := m.Detokenize(ids, false, special)
			if err != nil {
				t.Fatal(err)
			}
			d := NewDecoder(tok, special)
			var got []byte
			for _, id := range ids {
				chunk := d.Write(id)
				if len(chunk) > 0 && completePrefix(chunk) != len(chunk) {
					t.Errorf("%q: chunk %q ends inside a character", text, chunk)
				}
				got = append(got, chunk...)
			}
			got = append(got, d.Close()...)
			if !bytes.Equal(got, want) {
				t.Errorf("%q special=%v: stream %q, want %q", text, special, got, want)
				continue
			}
			same++
		}
	}
	t.Logf("Decoder streams on the Qwen3 vocabulary: %d of %d identical to llama_detokenize", same, n)
}

// TestTokenizeFuzzCorpusMatchesReference tokenizes the 2,000-string fuzz corpus on every vocabulary (each kept
// GGUF, SentencePiece and WordPiece ones included, and the synthetic Qwen3 model) with bankml and with the
// reference, in every addSpecial / parseSpecial mode, and detokenizes the ids in every removeSpecial /
// unparseSpecial mode; all must be identical.
func TestTokenizeFuzzCorpusMatchesReference(t *testing.T) {
	lib := loadReference(t)
	texts := fuzzCorpus(2000)
	modes := []struct{ add, parse bool }{{false, false}, {false, true}, {true, false}, {true, true}}
	total, totalSame, totalDetok, totalDetokSame := 0, 0, 0, 0
	for _, ov := range oracleVocabs(t) {
		t.Run(ov.name, func(t *testing.T) {
			tok := loadAnyTokenizer(t, ov.path)
			m := loadRefVocab(t, lib, ov.path)
			n, same, nd, sameD := 0, 0, 0, 0
			fails := 0
			for _, mode := range modes {
				for _, text := range texts {
					n++
					want, err := m.Tokenize(text, mode.add, mode.parse)
					if err != nil {
						t.Fatal(err)
					}
					got := tok.Tokenize(text, mode.add, mode.parse)
					if !slices.Equal(got, want) {
						if fails++; fails <= 5 {
							t.Errorf("add=%v parse=%v %q:\n got %v\nwant %v", mode.add, mode.parse, text, got, want)
						}
						continue
					}
					same++
					if !mode.add {
						continue
					}
					// Detokenize the ids of the addSpecial modes (BOS/EOS present where the vocabulary adds them).
					for _, d := range []struct{ remove, unparse bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
						nd++
						if slices.Contains(want, None) {
							t.Errorf("the reference produced LLAMA_TOKEN_NULL for %q", text)
							continue
						}
						wantText, err := m.Detokenize(want, d.remove, d.unparse)
						if err != nil {
							t.Fatal(err)
						}
						if gotText := tok.Detokenize(want, d.remove, d.unparse); !bytes.Equal(gotText, wantText) {
							if fails++; fails <= 5 {
								t.Errorf("detokenize remove=%v unparse=%v %v:\n got %q\nwant %q", d.remove, d.unparse, want, gotText, wantText)
							}
							continue
						}
						sameD++
					}
				}
			}
			t.Logf("%s: tokenize %d of %d identical; detokenize %d of %d identical", ov.name, same, n, sameD, nd)
			total += n
			totalSame += same
			totalDetok += nd
			totalDetokSame += sameD
		})
	}
	t.Logf("all vocabularies: tokenize %d of %d identical; detokenize %d of %d identical", totalSame, total, totalDetokSame, totalDetok)
}

// TestVocabularyMatchesReference compares, for every token of every vocabulary, the piece (special on and off),
// the attributes and the end-of-generation flag with the reference, and the special ids and add_bos / add_eos.
func TestVocabularyMatchesReference(t *testing.T) {
	lib := loadReference(t)
	totalPieces, totalPiecesSame := 0, 0
	for _, ov := range oracleVocabs(t) {
		t.Run(ov.name, func(t *testing.T) {
			tok := loadAnyTokenizer(t, ov.path)
			m := loadRefVocab(t, lib, ov.path)
			if m.NVocab() != tok.NVocab() {
				t.Fatalf("n_vocab: bankml %d, reference %d", tok.NVocab(), m.NVocab())
			}
			pieces, piecesSame, attrSame, eogSame := 0, 0, 0, 0
			for id := range int32(tok.NVocab()) {
				for _, special := range []bool{false, true} {
					pieces++
					want, err := m.TokenToPiece(id, special)
					if err != nil {
						t.Fatal(err)
					}
					if got := tok.TokenToPiece(id, special); !bytes.Equal(got, want) {
						if pieces-piecesSame <= 5 {
							t.Errorf("token %d %q special=%v: piece %q, want %q", id, tok.TokenText(id), special, got, want)
						}
						continue
					}
					piecesSame++
				}
				wa, err := m.TokenAttr(id)
				if err != nil {
					t.Fatal(err)
				}
				if got := tok.TokenAttr(id); uint32(got) != wa {
					if int(id)-attrSame < 5 {
						t.Errorf("token %d %q: attr %#x, want %#x", id, tok.TokenText(id), got, wa)
					}
				} else {
					attrSame++
				}
				we, _ := m.IsEOG(id)
				if tok.IsEOG(id) != we {
					t.Errorf("token %d %q: eog %v, want %v", id, tok.TokenText(id), tok.IsEOG(id), we)
				} else {
					eogSame++
				}
			}
			type specials interface {
				SEP() int32
				PAD() int32
				MASK() int32
				NL() int32
				FIM() (pre, suf, mid, pad, rep, sep int32)
			}
			sp := tok.(specials)
			pre, suf, mid, pad, rep, sep := sp.FIM()
			got := map[string]int32{"bos": tok.BOS(), "eos": tok.EOS(), "eot": tok.EOT(), "sep": sp.SEP(), "nl": sp.NL(),
				"pad": sp.PAD(), "mask": sp.MASK(), "fim_pre": pre, "fim_suf": suf, "fim_mid": mid, "fim_pad": pad,
				"fim_rep": rep, "fim_sep": sep}
			for _, name := range reference.Specials {
				want, err := m.Special(name)
				if err != nil {
					t.Fatal(err)
				}
				if got[name] != want {
					t.Errorf("%s: %d, want %d", name, got[name], want)
				}
			}
			addBOS, addEOS, err := m.AddBOSEOS()
			if err != nil {
				t.Fatal(err)
			}
			if tok.AddBOS() != addBOS || tok.AddEOS() != addEOS {
				t.Errorf("add_bos %v add_eos %v, want %v %v", tok.AddBOS(), tok.AddEOS(), addBOS, addEOS)
			}
			t.Logf("%s: token_to_piece %d of %d identical; attributes %d of %d; eog %d of %d",
				ov.name, piecesSame, pieces, attrSame, tok.NVocab(), eogSame, tok.NVocab())
			totalPieces += pieces
			totalPiecesSame += piecesSame
		})
	}
	t.Logf("all vocabularies: token_to_piece %d of %d identical", totalPiecesSame, totalPieces)
}

// BenchmarkTokenizeVsReference tokenizes the first 500 strings of the fuzz corpus (parse_special on) with bankml
// and with the reference on two BPE vocabularies (gpt-2: hand-written splitter; deepseek-llm: std::regex), in one
// process; compare the two sub-benchmarks of a vocabulary side by side.
func BenchmarkTokenizeVsReference(b *testing.B) {
	lib, err := reference.Load()
	if err != nil {
		b.Skipf("reference unavailable: %v", err)
	}
	texts := fuzzCorpus(500)
	size := 0
	for _, s := range texts {
		size += len(s)
	}
	for _, name := range []string{"ggml-vocab-gpt-2.gguf", "ggml-vocab-deepseek-llm.gguf"} {
		path := filepath.Join(modelsDir(b), "vocab", name)
		tok := loadAnyTokenizer(b, path)
		m, err := lib.LoadVocab(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/bankml", func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				for _, s := range texts {
					tok.Tokenize(s, false, true)
				}
			}
		})
		b.Run(name+"/reference", func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				for _, s := range texts {
					if _, err := m.Tokenize(s, false, true); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		m.Close()
	}
}
