package tokenizer

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/reference"

	"github.com/bankml/bankml/internal/testdata"
)

// Pieces the oracle generator draws from.
var (
	genWords = []string{"the", "The", "Once", "upon", "a", "time", "there", "was", "little", "girl",
		"named", "Lily", "she", "loved", "to", "play", "outside", "park", "cat", "dog", "Hello", "world",
		"tokenizer", "unbelievable", "ing", "ed", "tion", "x", "qz", "Zzyzx", "I'm", "don't", "they've",
		"we'll", "y'all", "café", "naïve", "Größe", "Ελλάδα", "привет", "Български", "日本語", "中文",
		"我想在apple工作", "한국어", "العربية", "עברית", "हिन्दी", "ภาษาไทย", "កាន់តែពិសេស", "Cửa", "Việt",
		"e\u0301", "n\u0303o"}
	genSpaces = []string{" ", " ", " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", " \n ", "\t \t", "\v", "\f"}
	genPunct  = []string{".", ",", "!", "?", "...", "--", "(", ")", "[", "]", "{", "}", "\"", "'", "`",
		"''''", "#", "$", "%", "&", "*", "+", "=", "======", "/", "\\", "|", "~", "^", "@", ";", ":", "<", ">",
		"«", "»", "“", "”", "—", "–", "…", "¿", "¡", "·", "•", "©", "™", "€", "£", "¥", "～"}
	genEmoji = []string{"🦙", "🚀", "😁", "✅", "❤️", "👍🏽", "🇫🇷", "🇯🇵", "👨‍👩‍👧‍👦", "🏳️‍🌈", "😶‍🌫️", "👩🏾‍💻",
		"🧑‍🤝‍🧑", "1️⃣", "🫠", "☕", "🐈‍⬛"}
	genSpecial = []string{"<s>", "</s>", "<unk>", "<s", "s>", "</", "<0x41>", "<0x0A>", "▁", "▁▁"}
	genInvalid = []string{"\xff", "\xe4\xbd", "\x80", "\xc3", "\xf0\x9f\x98", "\xed\xa0\x80"}
)

// genText returns a random string from r mixing words, digits, punctuation, white-space
// runs (leading ones too), scripts, emoji with ZWJ sequences, special-token texts and,
// rarely, invalid UTF-8.
func genText(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(4) == 0 {
		b.WriteString(genSpaces[r.IntN(len(genSpaces))])
	}
	n := 1 + r.IntN(12)
	for range n {
		switch k := r.IntN(100); {
		case k < 35:
			b.WriteString(genWords[r.IntN(len(genWords))])
		case k < 40:
			for range 1 + r.IntN(8) {
				b.WriteByte(byte('a' + r.IntN(26)))
			}
		case k < 50:
			for range 1 + r.IntN(10) {
				b.WriteByte(byte('0' + r.IntN(10)))
			}
		case k < 62:
			b.WriteString(genPunct[r.IntN(len(genPunct))])
		case k < 80:
			b.WriteString(genSpaces[r.IntN(len(genSpaces))])
		case k < 88:
			b.WriteString(genEmoji[r.IntN(len(genEmoji))])
		case k < 97:
			b.WriteString(genSpecial[r.IntN(len(genSpecial))])
		default:
			b.WriteString(genInvalid[r.IntN(len(genInvalid))])
		}
		if r.IntN(3) == 0 {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// oracleTexts returns the fixed edge cases followed by n generated strings.
func oracleTexts(n int) []string {
	texts := []string{"", " ", "  ", "\n", "\t", "a", " a", "<s>", "</s>", "<s></s>", " <s> ", "<s>Once upon a time",
		"Hello</s>world", "<unk>", "</s></s>", "<s> <s>", "\xff\xfe", "🦙", "👨‍👩‍👧‍👦", "▁", "<0x0A>"}
	r := rand.New(rand.NewPCG(20260928, 1))
	for range n {
		texts = append(texts, genText(r))
	}
	return texts
}

func loadReference(t *testing.T) *reference.Lib {
	t.Helper()
	lib, err := reference.Load()
	if err != nil {
		if errors.Is(err, reference.ErrNotInstalled) {
			testdata.Absent(t, "reference not installed: %v", err)
		}
		testdata.Absent(t, "reference unavailable: %v", err)
	}
	return lib
}

// TestTokenizeMatchesReference tokenizes at least 200 generated strings with bankml and
// with the reference, for every combination of addSpecial and parseSpecial, on real
// SentencePiece models, and compares the ids exactly.
func TestTokenizeMatchesReference(t *testing.T) {
	lib := loadReference(t)
	for _, rel := range []string{"stories260K.gguf", "llama-2-tiny-random.gguf"} {
		t.Run(rel, func(t *testing.T) {
			path := modelFile(t, rel)
			tok := loadGGUFTokenizer(t, path)
			m, err := lib.LoadModel(path)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.NVocab() != tok.NVocab() {
				t.Fatalf("n_vocab: bankml %d, reference %d", tok.NVocab(), m.NVocab())
			}
			texts := oracleTexts(300)
			for _, mode := range []struct{ addSpecial, parseSpecial bool }{
				{true, false}, {true, true}, {false, false}, {false, true},
			} {
				same := 0
				for _, text := range texts {
					want, err := m.Tokenize(text, mode.addSpecial, mode.parseSpecial)
					if err != nil {
						t.Fatal(err)
					}
					got := tok.Tokenize(text, mode.addSpecial, mode.parseSpecial)
					if !slices.Equal(got, want) {
						t.Errorf("addSpecial=%v parseSpecial=%v %q:\n got %v\nwant %v",
							mode.addSpecial, mode.parseSpecial, text, got, want)
						continue
					}
					same++
				}
				t.Logf("%s tokenize addSpecial=%v parseSpecial=%v: %d of %d identical",
					rel, mode.addSpecial, mode.parseSpecial, same, len(texts))
			}
		})
	}
}

// TestTokenToPieceMatchesReference compares the piece of every token of the vocabulary
// with the reference's, byte for byte, with special both true and false.
func TestTokenToPieceMatchesReference(t *testing.T) {
	lib := loadReference(t)
	for _, rel := range []string{"stories260K.gguf", "llama-2-tiny-random.gguf"} {
		t.Run(rel, func(t *testing.T) {
			path := modelFile(t, rel)
			tok := loadGGUFTokenizer(t, path)
			m, err := lib.LoadModel(path)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			for _, special := range []bool{false, true} {
				same := 0
				for id := range int32(tok.NVocab()) {
					want, err := m.TokenToPiece(id, special)
					if err != nil {
						t.Fatal(err)
					}
					if got := tok.TokenToPiece(id, special); !bytes.Equal(got, want) {
						t.Errorf("token %d %q special=%v: got %q, want %q", id, tok.TokenText(id), special, got, want)
						continue
					}
					same++
				}
				t.Logf("%s token_to_piece special=%v: %d of %d identical", rel, special, same, tok.NVocab())
			}
		})
	}
}

// TestOracleGeneratorCoversItsClasses guards the generator: its strings must contain the
// classes the oracle test promises to exercise.
func TestOracleGeneratorCoversItsClasses(t *testing.T) {
	texts := oracleTexts(300)
	if len(texts) < 200 {
		t.Fatalf("only %d texts", len(texts))
	}
	all := strings.Join(texts, "\x00")
	for _, want := range []string{"\t", "\n", "   ", "<s>", "</s>", "\u200d", "7", "!", "и", "語"} {
		if !strings.Contains(all, want) {
			t.Errorf("generated texts never contain %q", want)
		}
	}
	leading := 0
	for _, s := range texts {
		if strings.HasPrefix(s, " ") {
			leading++
		}
	}
	if leading == 0 {
		t.Error("no generated text starts with a space")
	}
	t.Logf("%d texts, %d with a leading space", len(texts), leading)
}
