package provenance

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gowebpki/jcs"
)

// The members of a receipt that carry its signature. All but FieldSignature are covered by it.
const (
	FieldSigned    = "signed"    // true for a signed receipt
	FieldKeyName   = "key_name"  // the signing key's name (the log's origin)
	FieldKeyID     = "key_id"    // the key's C2SP signed-note key hash, 8 hex digits
	FieldSignature = "signature" // base64 (RFC 4648 §4) of the 64-byte Ed25519 signature
)

// Errors of VerifyReceipt.
var (
	ErrUnsigned     = errors.New("receipt: not signed")
	ErrWrongKey     = errors.New("receipt: signed by another key")
	ErrBadSignature = errors.New("receipt: the signature does not verify")
	ErrBadReceipt   = errors.New("receipt: malformed")
)

// SignedMessage returns the bytes a receipt's signature covers: the RFC 8785 (JCS) canonical form of the
// receipt object without its "signature" member. Input: one JSON object (any key order and white space);
// an object with a repeated member name is refused (ErrBadReceipt), so that no two readers can see
// different values.
func SignedMessage(receipt []byte) ([]byte, error) {
	members, err := objectMembers(receipt)
	if err != nil {
		return nil, err
	}
	delete(members, FieldSignature)
	b, err := json.Marshal(members)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadReceipt, err)
	}
	c, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("%w: canonicalizing: %v", ErrBadReceipt, err)
	}
	return c, nil
}

// objectMembers splits a JSON object into its members, refusing repeated names.
func objectMembers(b []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("%w: not a JSON object", ErrBadReceipt)
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadReceipt, err)
		}
		name := t.(string) // inside an object the decoder yields member names as strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: member %q: %v", ErrBadReceipt, name, err)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("%w: member %q appears twice", ErrBadReceipt, name)
		}
		m[name] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadReceipt, err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("%w: data after the object", ErrBadReceipt)
	}
	return m, nil
}

// SignReceipt signs a receipt object that already names this key (signed true, key_name and key_id, as
// the server fills them before signing) and returns the signature as the base64 of FieldSignature.
func (s *Signer) SignReceipt(receipt []byte) (string, error) {
	h, err := receiptHeader(receipt)
	if err != nil {
		return "", err
	}
	if !h.Signed || h.KeyName != s.Name() || h.KeyID != s.KeyID() {
		return "", fmt.Errorf("%w: the receipt must say signed true, key_name %q and key_id %q before it is signed", ErrBadReceipt, s.Name(), s.KeyID())
	}
	msg, err := SignedMessage(receipt)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(ed25519.Sign(s.priv, msg)), nil
}

// header is the signature members of a receipt.
type header struct {
	Signed    bool   `json:"signed"`
	KeyName   string `json:"key_name"`
	KeyID     string `json:"key_id"`
	Signature string `json:"signature"`
}

func receiptHeader(receipt []byte) (header, error) {
	var h header
	if err := json.Unmarshal(receipt, &h); err != nil {
		return h, fmt.Errorf("%w: %v", ErrBadReceipt, err)
	}
	return h, nil
}

// ReceiptKey is who signed a receipt, as VerifyReceipt found it.
type ReceiptKey struct {
	Name string `json:"key_name"`
	ID   string `json:"key_id"`
}

// VerifyReceipt checks a receipt's signature against key: the receipt must say signed true, name key's
// name (when key has one: a verifier key does, a PEM key does not) and key's key hash under that name,
// and its signature must verify over SignedMessage. Errors: ErrUnsigned, ErrWrongKey, ErrBadSignature,
// ErrBadReceipt.
func VerifyReceipt(receipt []byte, key PublicKey) (ReceiptKey, error) {
	h, err := receiptHeader(receipt)
	if err != nil {
		return ReceiptKey{}, err
	}
	rk := ReceiptKey{Name: h.KeyName, ID: h.KeyID}
	if !h.Signed {
		return rk, ErrUnsigned
	}
	sig, err := base64.StdEncoding.DecodeString(h.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return rk, fmt.Errorf("%w: signature %q is not the base64 of 64 bytes", ErrBadReceipt, short(h.Signature))
	}
	if key.Name != "" && h.KeyName != key.Name {
		return rk, fmt.Errorf("%w: the receipt names key %q, the key given is %q", ErrWrongKey, h.KeyName, key.Name)
	}
	if want := KeyID(h.KeyName, key.Key); h.KeyID != want {
		return rk, fmt.Errorf("%w: the receipt's key_id %s is not the given key's (%s under the name %q)", ErrWrongKey, h.KeyID, want, h.KeyName)
	}
	msg, err := SignedMessage(receipt)
	if err != nil {
		return rk, err
	}
	if !ed25519.Verify(key.Key, msg, sig) {
		return rk, ErrBadSignature
	}
	return rk, nil
}
