package tokenizer

// Tokenizer is what the rest of bankml needs from a model's tokenizer, whatever its kind
// (*SPM, *BPE or *WPM; FromGGUF picks it from tokenizer.ggml.model).
// Token ids are int32 as in llama.cpp; None (-1) means "no such token".
type Tokenizer interface {
	// Tokenize converts text to token ids like llama_tokenize: addSpecial adds BOS/EOS as
	// the vocabulary asks (WordPiece: BOS and SEP), parseSpecial turns the texts of control
	// tokens into those tokens (user-defined tokens are split out in any case).
	Tokenize(text string, addSpecial, parseSpecial bool) []int32
	// TokenToPiece returns the bytes of one token like llama_token_to_piece with lstrip 0;
	// control tokens give their text only with special. A piece may be part of a UTF-8
	// sequence: use a Decoder to stream text.
	TokenToPiece(id int32, special bool) []byte
	// Detokenize converts ids to text like llama_detokenize.
	Detokenize(ids []int32, removeSpecial, unparseSpecial bool) []byte

	// NVocab returns the number of tokens.
	NVocab() int
	// BOS returns the beginning-of-sequence token, or None.
	BOS() int32
	// EOS returns the end-of-sequence token, or None.
	EOS() int32
	// EOT returns the end-of-turn token, or None.
	EOT() int32
	// AddBOS reports whether Tokenize with addSpecial puts BOS first.
	AddBOS() bool
	// AddEOS reports whether Tokenize with addSpecial puts EOS last.
	AddEOS() bool
	// IsEOG reports whether a token ends generation.
	IsEOG(id int32) bool
	// EOGs returns every end-of-generation token in ascending order.
	EOGs() []int32
	// TokenText returns a token's text as stored in the vocabulary.
	TokenText(id int32) string
	// TokenAttr returns a token's attributes.
	TokenAttr(id int32) Attr
}

var (
	_ Tokenizer = (*SPM)(nil)
	_ Tokenizer = (*BPE)(nil)
	_ Tokenizer = (*WPM)(nil)
)
