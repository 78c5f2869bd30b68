package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/bankml/bankml/tokenizer"
)

// tokenizeCmd prints a text's tokens as llama.cpp's llama-tokenize (tools/tokenize) does. It takes
// llama-tokenize's flags: -m/--model for the file, -p/--prompt, -f/--file and --stdin for the text (resolved by
// one path, text), --log-disable (bankml tokenize writes no log).
type tokenizeCmd struct {
	Model      string   `arg:"" optional:"" name:"FILE" help:"Path to a GGUF file (only its vocabulary is read), or give it as -m/--model." type:"path"`
	ModelFlag  string   `short:"m" name:"model" placeholder:"FNAME" help:"Path to a GGUF file, as llama-tokenize's -m/--model, instead of FILE." type:"path"`
	Prompt     *rawText `short:"p" name:"prompt" help:"Text to tokenize; read from standard input when neither -p, -f nor --stdin is given (all of it, byte for byte)."`
	File       string   `short:"f" name:"file" placeholder:"FNAME" help:"Read the text from a file, byte for byte (a trailing newline is kept: it is a token), as llama-tokenize's -f/--file; it counts over -p." type:"path"`
	Stdin      bool     `name:"stdin" help:"Read the text from standard input, as llama-tokenize's --stdin; it counts over -p and -f."`
	NoSpecial  bool     `name:"no-special" aliases:"no-parse-special" help:"Do not parse special-token text such as <|im_start|> (llama-tokenize --no-parse-special)."`
	IDsOnly    bool     `name:"ids-only" aliases:"ids" help:"Print only the ids, as a list like [1, 2, 3] (llama-tokenize --ids)."`
	NoBOS      bool     `name:"no-bos" help:"Do not add BOS (and EOS) even if the model adds them."`
	NoEscape   bool     `name:"no-escape" help:"Take the text as is; by default the escapes \\n \\r \\t \\' \\\" \\\\ and \\xHH are processed (in -p, -f and standard input alike), as llama-tokenize does."`
	ShowCount  bool     `name:"show-count" help:"Also print the number of tokens."`
	LogDisable bool     `name:"log-disable" help:"Accepted for llama-tokenize's --log-disable: bankml tokenize writes no log, so it changes nothing."`
}

// detokenizeCmd prints the text of token ids.
type detokenizeCmd struct {
	Model         string   `arg:"" name:"FILE" help:"Path to a GGUF file (only its vocabulary is read)." type:"path"`
	IDs           []string `arg:"" optional:"" name:"IDS" range:"[0, n_vocab)" rangenote:"token ids, below the model's vocabulary size" help:"Token ids (separated by spaces or commas; [ and ] are ignored, so tokenize --ids-only output works); read from standard input when absent."`
	NoSpecial     bool     `name:"no-special" help:"Render control tokens (such as <|im_end|>) as nothing instead of their text."`
	RemoveSpecial bool     `name:"remove-special" help:"Drop a leading BOS and a trailing EOS where the model adds them (llama_detokenize remove_special)."`
}

// loadTokenizer opens a GGUF file and builds its tokenizer: exit 1 when the file cannot be read, 2 when it is
// not a valid GGUF file or its tokenizer is not supported.
func loadTokenizer(cmd, path string) (tokenizer.Tokenizer, error) {
	f, err := openGGUF(cmd, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, cannotRun(fmt.Errorf("%s: %s: %w", cmd, path, err))
	}
	return tok, nil
}

// processEscapes is llama.cpp's string_process_escapes (common/common.cpp): \n \r \t \' \" \\ and \xHH (two hex
// digits) are replaced; any other backslash sequence is kept as it is.
func processEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case '\'', '"', '\\':
			b.WriteByte(c)
		case 'x':
			if i+2 < len(s) {
				if v, ok := strtolTwo(s[i+1 : i+3]); ok {
					b.WriteByte(byte(v))
					i += 2
					break
				}
			}
			b.WriteString(`\x`)
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String()
}

// strtolTwo is strtol(x, &end, 16) on the two characters x, succeeding when end == x+2 as
// string_process_escapes requires: C's leading white space and sign are accepted (" F", "+F", "-F").
func strtolTwo(x string) (int64, bool) {
	i := 0
	for i < len(x) && (x[i] == ' ' || (x[i] >= '\t' && x[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(x) && (x[i] == '+' || x[i] == '-') {
		neg = x[i] == '-'
		i++
	}
	start := i
	var v int64
	for ; i < len(x); i++ {
		d := strings.IndexByte("0123456789abcdefABCDEF", x[i])
		if d < 0 {
			break
		}
		if d >= 16 {
			d -= 6
		}
		v = v*16 + int64(d)
	}
	if i == start || i != len(x) {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// Run tokenizes the text and prints "%6d -> 'piece'" lines (pieces with special-token text, raw bytes) or, with
// --ids-only, the list of ids. As llama-tokenize: BOS (and EOS) are added when the model adds BOS, unless
// --no-bos; special-token text is parsed unless --no-special.
func (c *tokenizeCmd) Run(stdin io.Reader, stdout io.Writer) error {
	tok, err := loadTokenizer("tokenize", c.Model)
	if err != nil {
		return err
	}
	text, err := c.text(stdin)
	if err != nil {
		return err
	}
	ids := tok.Tokenize(text, tok.AddBOS() && !c.NoBOS, !c.NoSpecial)
	w := bufio.NewWriter(stdout)
	if c.IDsOnly {
		w.WriteByte('[')
		for i, id := range ids {
			if i > 0 {
				w.WriteString(", ")
			}
			w.WriteString(strconv.Itoa(int(id)))
		}
		w.WriteString("]\n")
	} else {
		for _, id := range ids {
			fmt.Fprintf(w, "%6d -> '", id)
			w.Write(tok.TokenToPiece(id, true))
			w.WriteString("'\n")
		}
	}
	if c.ShowCount {
		fmt.Fprintf(w, "Total number of tokens: %d\n", len(ids))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("tokenize: %w", err)
	}
	return nil
}

// Validate (kong's hook after parsing) takes the file from FILE or llama-tokenize's -m/--model FNAME: one of
// them, or both naming the same file; neither, two different files, or a directory is a usage error naming them
// (a directory as FILE is named MODEL, as detokenize names it).
func (c *tokenizeCmd) Validate() error {
	path, label := c.Model, "MODEL"
	switch {
	case path == "" && c.ModelFlag == "":
		return errors.New(`expected "<FILE>" or -m/--model FNAME: the GGUF file whose vocabulary is read`)
	case path != "" && c.ModelFlag != "" && path != c.ModelFlag && !sameFile(path, c.ModelFlag):
		return fmt.Errorf("the model is given twice, as FILE %q and as -m/--model %q: give one", path, c.ModelFlag)
	case path == "":
		path, label = c.ModelFlag, "-m/--model"
	}
	if err := notDirectory(label, path); err != nil {
		return err
	}
	c.Model = path
	return nil
}

// text is the text to tokenize, from one source as llama-tokenize picks it: --stdin over -f over -p (whatever
// their order), standard input when none is given (llama-tokenize refuses that); -f's file and standard input
// byte for byte. The escapes are processed unless --no-escape, whatever the source.
func (c *tokenizeCmd) text(stdin io.Reader) (string, error) {
	var text string
	switch {
	case c.Stdin || (c.File == "" && c.Prompt == nil):
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", fmt.Errorf("tokenize: reading standard input: %w", err)
		}
		text = string(b)
	case c.File != "":
		b, err := os.ReadFile(c.File)
		if err != nil {
			return "", fmt.Errorf("tokenize: -f/--file: %w", err)
		}
		text = string(b)
	default:
		text = string(*c.Prompt)
	}
	if !c.NoEscape {
		text = processEscapes(text)
	}
	return text, nil
}

// parseIDs reads token ids separated by white space or commas, ignoring [ and ]; an id that is not a number or is
// outside [0, nVocab) is an error naming it.
func parseIDs(fields []string, nVocab int) ([]int32, error) {
	var ids []int32
	for _, f := range fields {
		for _, s := range strings.FieldsFunc(f, func(r rune) bool {
			return r == ',' || r == '[' || r == ']' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
		}) {
			v, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("detokenize: %q is not a token id", s)
			}
			if v < 0 || v >= int64(nVocab) {
				return nil, fmt.Errorf("detokenize: token id %d is outside the vocabulary of %d tokens", v, nVocab)
			}
			ids = append(ids, int32(v))
		}
	}
	return ids, nil
}

// Run prints the text of the ids as llama_detokenize gives it (control tokens as their text unless --no-special),
// byte for byte, with no newline added.
func (c *detokenizeCmd) Run(stdin io.Reader, stdout io.Writer) error {
	tok, err := loadTokenizer("detokenize", c.Model)
	if err != nil {
		return err
	}
	fields := c.IDs
	if len(fields) == 0 {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("detokenize: reading standard input: %w", err)
		}
		fields = []string{string(b)}
	}
	ids, err := parseIDs(fields, tok.NVocab())
	if err != nil {
		return err
	}
	if _, err := stdout.Write(tok.Detokenize(ids, c.RemoveSpecial, !c.NoSpecial)); err != nil {
		return fmt.Errorf("detokenize: %w", err)
	}
	return nil
}
