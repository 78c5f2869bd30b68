package provenance

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bankml/bankml/internal/testdata"
)

// rfc8785Sample is the sample of the JSON Canonicalization Scheme's author (cyberphone/json-canonicalization,
// README, which RFC 8785 reproduces): its input and its expected output, given there as UTF-8 hex.
const (
	rfc8785Input = `{
  "numbers": [1E30,4.50,6,2e-3,0.000000000000000000000000001],
  "escaping": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "other":  [null, true, false]
}`
	rfc8785OutputHex = "7b22657363617069 6e67223a22e282ac 245c75303030665c 6e4127425c225c5c" +
		"5c5c5c222f222c22 6e756d6265727322 3a5b31652b33302c 342e352c362c302e" +
		"3030322c31652d32 375d2c226f746865 72223a5b6e756c6c 2c747275652c6661" +
		"6c73655d7d"
)

// testReceipt is a receipt as bankml serve sends it (the fields of serve.Receipt), signed by s.
func testReceipt(t testing.TB, s *Signer) []byte {
	t.Helper()
	r := map[string]any{
		"version": "test", "engine": "bankml test", "model_sha256": strings.Repeat("ab", 32), "guard": "play",
		"pinned": true, "prompt_tokens": 5, "completion_tokens": 8, "cached_tokens": 0, "ttft_ms": 12.345678,
		"wall_ms": 101.25, "request_sha256": strings.Repeat("01", 32), "response_sha256": strings.Repeat("fe", 32),
		"ledger_index": 41, "entry_sha256": strings.Repeat("77", 32),
		FieldSigned: true, FieldKeyName: s.Name(), FieldKeyID: s.KeyID(),
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := s.SignReceipt(b)
	if err != nil {
		t.Fatal(err)
	}
	r[FieldSignature] = sig
	b, err = json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testSigner(t testing.TB) (*Signer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "op.key")
	if _, err := WriteKeyFiles(path, "bankml.test/log"); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSigner(path)
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}

func TestSignedMessageIsRFC8785WithoutTheSignature(t *testing.T) {
	var in map[string]any
	if err := json.Unmarshal([]byte(rfc8785Input), &in); err != nil {
		t.Fatal(err)
	}
	in[FieldSignature] = "left out"
	b, _ := json.MarshalIndent(in, "", "   ")
	// Through the raw input text (numbers as written, escapes as written) and through a re-encoding.
	for _, src := range [][]byte{[]byte(rfc8785Input), b} {
		got, err := SignedMessage(src)
		if err != nil {
			t.Fatal(err)
		}
		if h := bytesHex(got); h != sampleHex() {
			t.Errorf("SignedMessage:\n got %s (%s)\nwant %s", h, got, sampleHex())
		}
	}
	if _, err := SignedMessage([]byte(`{"a":1,"a":2}`)); !errors.Is(err, ErrBadReceipt) {
		t.Errorf("a repeated member: %v, want ErrBadReceipt", err)
	}
	if _, err := SignedMessage([]byte(`[1]`)); !errors.Is(err, ErrBadReceipt) {
		t.Errorf("an array: %v, want ErrBadReceipt", err)
	}
}

// sampleHex is rfc8785OutputHex without the spaces that group it.
func sampleHex() string { return strings.ReplaceAll(rfc8785OutputHex, " ", "") }

func bytesHex(b []byte) string {
	const digits = "0123456789abcdef"
	var sb strings.Builder
	for _, c := range b {
		sb.WriteByte(digits[c>>4])
		sb.WriteByte(digits[c&15])
	}
	return sb.String()
}

// TestVerifyReceiptFailsOnAnyChange signs a receipt and changes it: every change to a covered byte, the
// key, or the signature fails; re-encoding it (member order, white space) does not.
func TestVerifyReceiptFailsOnAnyChange(t *testing.T) {
	s, _ := testSigner(t)
	other, _ := testSigner(t)
	rc := testReceipt(t, s)
	if k, err := VerifyReceipt(rc, s.Public()); err != nil || k.ID != s.KeyID() {
		t.Fatalf("VerifyReceipt of a fresh receipt: %+v %v", k, err)
	}
	var m map[string]any
	if err := json.Unmarshal(rc, &m); err != nil {
		t.Fatal(err)
	}
	reenc, _ := json.MarshalIndent(m, "  ", "\t")
	if _, err := VerifyReceipt(reenc, s.Public()); err != nil {
		t.Errorf("a re-encoded receipt (other member order and white space): %v", err)
	}
	pemOnly := s.Public()
	pemOnly.Name = ""
	if _, err := VerifyReceipt(rc, pemOnly); err != nil {
		t.Errorf("with the key read from PEM (no name): %v", err)
	}
	change := func(f func(map[string]any)) []byte {
		c := map[string]any{}
		for k, v := range m {
			c[k] = v
		}
		f(c)
		b, _ := json.Marshal(c)
		return b
	}
	for _, c := range []struct {
		name    string
		receipt []byte
		key     PublicKey
		want    error
	}{
		{"one hex digit of response_sha256 changed", change(func(c map[string]any) {
			c["response_sha256"] = "0" + c["response_sha256"].(string)[1:]
		}), s.Public(), ErrBadSignature},
		{"wall_ms changed by one in the last digit", change(func(c map[string]any) { c["wall_ms"] = 101.26 }), s.Public(), ErrBadSignature},
		{"ledger_index changed", change(func(c map[string]any) { c["ledger_index"] = 42 }), s.Public(), ErrBadSignature},
		{"a member added", change(func(c map[string]any) { c["note"] = "x" }), s.Public(), ErrBadSignature},
		{"a member removed", change(func(c map[string]any) { delete(c, "guard") }), s.Public(), ErrBadSignature},
		{"signed set to false", change(func(c map[string]any) { c[FieldSigned] = false }), s.Public(), ErrUnsigned},
		{"one bit of the signature flipped", change(func(c map[string]any) {
			sig, _ := base64.StdEncoding.DecodeString(c[FieldSignature].(string))
			sig[10] ^= 1
			c[FieldSignature] = base64.StdEncoding.EncodeToString(sig)
		}), s.Public(), ErrBadSignature},
		{"another key given", rc, other.Public(), ErrWrongKey},
		{"another key given as PEM", rc, PublicKey{Key: other.Public().Key}, ErrWrongKey},
		{"the signature cut short", change(func(c map[string]any) { c[FieldSignature] = "AAAA" }), s.Public(), ErrBadReceipt},
	} {
		if _, err := VerifyReceipt(c.receipt, c.key); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	unsigned := change(func(c map[string]any) {
		c[FieldSigned] = false
		delete(c, FieldSignature)
		delete(c, FieldKeyID)
		delete(c, FieldKeyName)
	})
	if _, err := VerifyReceipt(unsigned, s.Public()); !errors.Is(err, ErrUnsigned) {
		t.Errorf("an unsigned receipt: %v, want ErrUnsigned", err)
	}
	if _, err := s.SignReceipt(unsigned); !errors.Is(err, ErrBadReceipt) {
		t.Errorf("signing a receipt that does not name the key: %v, want ErrBadReceipt", err)
	}
}

var (
	stdlibOnce sync.Once
	stdlibBin  string
	stdlibErr  error
)

// stdlibVerify builds testdata/stdlibverify (once per test binary), after checking that it imports the
// standard library only.
func stdlibVerify(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		testdata.Absent(t, "the go command is not on PATH: cannot build testdata/stdlibverify")
	}
	stdlibOnce.Do(func() {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./testdata/stdlibverify").Output()
		if err != nil {
			stdlibErr = err
			return
		}
		if got := strings.TrimSpace(string(out)); got != "github.com/bankml/bankml/provenance/testdata/stdlibverify" {
			stdlibErr = errors.New("stdlibverify depends on more than the standard library: " + got)
			return
		}
		dir, err := os.MkdirTemp("", "stdlibverify-")
		if err != nil {
			stdlibErr = err
			return
		}
		stdlibBin = filepath.Join(dir, "stdlibverify")
		if out, err := exec.Command("go", "build", "-o", stdlibBin, "./testdata/stdlibverify").CombinedOutput(); err != nil {
			stdlibErr = errors.New(string(out))
		}
	})
	if stdlibErr != nil {
		t.Fatal(stdlibErr)
	}
	t.Cleanup(func() {}) // the binary's folder is left to the OS temp cleaner; it is a few MB
	return stdlibBin
}

// TestReceiptsVerifyWithIndependentImplementations is the "done when": a signed receipt verifies
// with a Go program using only the standard library and with openssl (over the bytes that program
// canonicalizes), and a changed byte fails both.
func TestReceiptsVerifyWithIndependentImplementations(t *testing.T) {
	bin := stdlibVerify(t)
	s, keyPath := testSigner(t)
	dir := t.TempDir()
	rc := testReceipt(t, s)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("receipt.json", rc)
	// One byte changed in a covered value: the first hex digit of response_sha256 (fe... becomes fd...).
	i := bytes.Index(rc, []byte(`"response_sha256":"fe`))
	bad := append([]byte(nil), rc...)
	bad[i+len(`"response_sha256":"f`)] = 'd'
	badPath := write("changed.json", bad)

	// The standard-library program agrees on the signed bytes and verifies.
	msg, err := exec.Command(bin, "-canonical", good).Output()
	if err != nil {
		t.Fatal(err)
	}
	want, err := SignedMessage(rc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(msg, want) {
		t.Fatalf("stdlibverify's canonical bytes differ from SignedMessage:\n%s\n%s", msg, want)
	}
	// It also reproduces the RFC 8785 sample.
	sample, err := exec.Command(bin, "-canonical", write("sample.json", []byte(rfc8785Input))).Output()
	if err != nil || bytesHex(sample) != sampleHex() {
		t.Errorf("stdlibverify -canonical of the RFC 8785 sample: %s %v", sample, err)
	}
	pass, total := 0, 0
	check := func(name string, ok bool) {
		total++
		if ok {
			pass++
		} else {
			t.Errorf("%s", name)
		}
	}
	out, err := exec.Command(bin, good, keyPath+PEMSuffix).CombinedOutput()
	check("stdlibverify accepts the receipt: "+string(out), err == nil && strings.TrimSpace(string(out)) == "ok")
	out, err = exec.Command(bin, badPath, keyPath+PEMSuffix).CombinedOutput()
	check("stdlibverify refuses the changed receipt: "+string(out), err != nil && strings.Contains(string(out), "does not verify"))

	// openssl verifies the raw Ed25519 signature over the canonical bytes.
	if _, err := exec.LookPath("openssl"); err != nil {
		testdata.Absent(t, "openssl is not installed: the openssl half of the check is skipped")
	}
	var m struct {
		Signature string `json:"signature"`
	}
	if err := json.Unmarshal(rc, &m); err != nil {
		t.Fatal(err)
	}
	sig, _ := base64.StdEncoding.DecodeString(m.Signature)
	sigPath := write("sig.bin", sig)
	msgPath := write("msg.bin", msg)
	openssl := func(in string) (string, error) {
		out, err := exec.Command("openssl", "pkeyutl", "-verify", "-pubin", "-inkey", keyPath+PEMSuffix, "-rawin", "-in", in, "-sigfile", sigPath).CombinedOutput()
		return string(out), err
	}
	out2, err := openssl(msgPath)
	check("openssl verifies the canonical bytes: "+out2, err == nil && strings.Contains(out2, "Signature Verified Successfully"))
	badMsg, err := exec.Command(bin, "-canonical", badPath).Output()
	if err != nil {
		t.Fatal(err)
	}
	out2, err = openssl(write("changed-msg.bin", badMsg))
	check("openssl refuses the changed receipt's bytes: "+out2, err != nil)
	// docs/receipts.md's Python one-liner gives the same bytes for bankml's receipts.
	if py, err := exec.LookPath("python3"); err == nil {
		out, err := exec.Command(py, "-c", `import json,sys; r=json.load(open(sys.argv[1])); r.pop("signature"); sys.stdout.write(json.dumps(r, sort_keys=True, separators=(",",":"), ensure_ascii=False))`, good).Output()
		check("python3's json.dumps gives the signed bytes: "+string(out), err == nil && bytes.Equal(out, want))
	}
	t.Logf("independent verifications: %d of %d as expected (stdlib Go program, openssl 3 pkeyutl, python3 when present)", pass, total)
}
