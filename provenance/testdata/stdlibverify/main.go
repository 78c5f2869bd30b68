// Command stdlibverify checks a bankml receipt's signature with the Go standard library only, an implementation
// independent of bankml's, for the receipt tests of package provenance.
//
// # Design record
//
// What. bankml canonicalizes with github.com/gowebpki/jcs and signs through golang.org/x/mod/sumdb/note keys;
// this program does neither:
//
//	stdlibverify RECEIPT.json PUBLIC.pem   verify; exit 0 and "ok" or exit 1 and the reason
//	stdlibverify -canonical RECEIPT.json   print the signed bytes (RFC 8785 of the receipt without "signature")
//
// The canonicalizer covers JSON as RFC 8785 defines it: members sorted by UTF-16 code units, no white
// space, strings escaped as ECMAScript's JSON.stringify, numbers as ECMAScript's Number::toString.
//
// Follows. RFC 8785 (JSON Canonicalization Scheme) and the C2SP signed-note key-hash rule, written from the
// specifications.
//
// Deliberate differences. None intended: any disagreement with bankml's verifier is a bug in one of them.
//
// Determinism. The signed bytes are a pure function of the receipt.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

func main() {
	args := os.Args[1:]
	canonicalOnly := len(args) > 0 && args[0] == "-canonical"
	if canonicalOnly {
		args = args[1:]
	}
	if (canonicalOnly && len(args) != 1) || (!canonicalOnly && len(args) != 2) {
		fmt.Fprintln(os.Stderr, "usage: stdlibverify RECEIPT.json PUBLIC.pem | stdlibverify -canonical RECEIPT.json")
		os.Exit(2)
	}
	raw, err := os.ReadFile(args[0])
	if err != nil {
		fail(err)
	}
	var receipt map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&receipt); err != nil {
		fail(err)
	}
	sigB64, _ := receipt["signature"].(string)
	delete(receipt, "signature")
	var msg bytes.Buffer
	if err := canonical(&msg, receipt); err != nil {
		fail(err)
	}
	if canonicalOnly {
		os.Stdout.Write(msg.Bytes())
		return
	}
	pemBytes, err := os.ReadFile(args[1])
	if err != nil {
		fail(err)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		fail(errors.New("no PEM block in the key file"))
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		fail(err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		fail(errors.New("not an Ed25519 key"))
	}
	if receipt["signed"] != true {
		fail(errors.New("the receipt says it is not signed"))
	}
	// C2SP signed-note key hash: SHA-256(name || "\n" || 0x01 || key), first 4 bytes.
	name, _ := receipt["key_name"].(string)
	h := sha256.Sum256(append(append([]byte(name+"\n"), 0x01), pub...))
	if id, _ := receipt["key_id"].(string); id != hex.EncodeToString(h[:4]) {
		fail(fmt.Errorf("key_id %q is not this key's %x", id, h[:4]))
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil {
		fail(err)
	}
	if !ed25519.Verify(pub, msg.Bytes(), sig) {
		fail(errors.New("the signature does not verify"))
	}
	fmt.Println("ok")
}

func fail(err error) {
	fmt.Println("FAIL:", err)
	os.Exit(1)
}

// canonical writes v as RFC 8785 §3.2 serializes it.
func canonical(w *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		w.WriteString("null")
	case bool:
		w.WriteString(strconv.FormatBool(v))
	case string:
		writeString(w, v)
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(f, 0) {
			return fmt.Errorf("number %s: not an IEEE 754 double", v)
		}
		w.WriteString(esNumber(f))
	case []any:
		w.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := canonical(w, e); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return lessUTF16(keys[i], keys[j]) })
		w.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.WriteByte(',')
			}
			writeString(w, k)
			w.WriteByte(':')
			if err := canonical(w, v[k]); err != nil {
				return err
			}
		}
		w.WriteByte('}')
	default:
		return fmt.Errorf("unexpected %T", v)
	}
	return nil
}

// lessUTF16 orders strings by their UTF-16 code units (RFC 8785 §3.2.3).
func lessUTF16(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

// writeString escapes as ECMAScript's JSON.stringify (RFC 8785 §3.2.2.2).
func writeString(w *bytes.Buffer, s string) {
	w.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			w.WriteString(`\"`)
		case '\\':
			w.WriteString(`\\`)
		case '\b':
			w.WriteString(`\b`)
		case '\f':
			w.WriteString(`\f`)
		case '\n':
			w.WriteString(`\n`)
		case '\r':
			w.WriteString(`\r`)
		case '\t':
			w.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(w, `\u%04x`, r)
			} else {
				w.WriteRune(r)
			}
		}
	}
	w.WriteByte('"')
}

// esNumber is ECMAScript's Number::toString for a finite double (RFC 8785 §3.2.2.3).
func esNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// The shortest digits that round-trip, and the decimal exponent n with value = 0.d1d2...dk × 10^n.
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±x
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	s := digits[:1]
	if k > 1 {
		s += "." + digits[1:]
	}
	if n-1 >= 0 {
		return sign + s + "e+" + strconv.Itoa(n-1)
	}
	return sign + s + "e-" + strconv.Itoa(-(n - 1))
}
