package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bankml/bankml/ledger"
)

// Receipt is the bankml_receipt object sent with every answer: a top-level field of a non-streamed OpenAI
// answer, of the final chunk of a streamed one, a field of the final NDJSON line of an Ollama answer. It
// lets a client check, against its own copy of the request and of the text it received, that this server
// answered it with the verified model (docs/serve.md, "The receipt"). With an operator key (Options.Signer) it is
// signed: an Ed25519 signature over the RFC 8785 canonical form of every other member
// (provenance.VerifyReceipt, docs/receipts.md); without one it says signed: false. With a transparency log
// (Options.TLog) it names the answer's leaf: ledger_index is the leaf index, entry_sha256 the leaf's data
// (the sha256 of the private history line, which stays on the server), log_origin the log.
type Receipt struct {
	Version          string   `json:"version"`                // bankml's version
	Engine           string   `json:"engine"`                 // what computed the answer
	Match            string   `json:"match"`                  // the llama.cpp CPU variant the answer is exact against (--match), e.g. "haswell"
	ModelSHA256      string   `json:"model_sha256"`           // the model file's sha256, lower-case hex
	Guard            string   `json:"guard"`                  // the guard's verdict at admission ("play")
	Pinned           bool     `json:"pinned"`                 // false when served with --unpinned
	PromptTokens     int      `json:"prompt_tokens"`          // tokens of the prompt (cached ones included)
	CompletionTokens int      `json:"completion_tokens"`      // tokens generated (an ending EOG token included, as llama-server counts)
	CachedTokens     int      `json:"cached_tokens"`          // prompt tokens reused from the slot's cache (timings.cache_n)
	TTFTMS           *float64 `json:"ttft_ms"`                // ms from the request's arrival to the first token; null when none was generated
	WallMS           float64  `json:"wall_ms"`                // ms from the request's arrival to the answer's completion
	RequestSHA256    string   `json:"request_sha256"`         // sha256 of the exact request body bytes
	ResponseSHA256   string   `json:"response_sha256"`        // sha256 of the answer text exactly as the client receives it
	LedgerIndex      *uint64  `json:"ledger_index,omitempty"` // the leaf index in the log (with a log), else the history entry's index
	EntrySHA256      string   `json:"entry_sha256,omitempty"` // the log leaf's data: sha256 of the history line (with a log)
	LogOrigin        string   `json:"log_origin,omitempty"`   // the log's origin (its checkpoints' first line), with a log
	Signed           bool     `json:"signed"`                 // true when signed by the operator key
	KeyName          string   `json:"key_name,omitempty"`     // the key's name (the log's origin)
	KeyID            string   `json:"key_id,omitempty"`       // the key's C2SP signed-note key hash, 8 hex digits
	Signature        string   `json:"signature,omitempty"`    // base64 Ed25519 signature over the RFC 8785 form of the other members
}

// exchange is one request being answered: its body exactly as received and when it arrived. Routes create it
// with Server.begin and finish it with Server.finish.
type exchange struct {
	body     []byte
	received time.Time
	firstTok time.Time // zero until the first token is released
}

// usage is what an answer counted, for the receipt (the metrics count from the engine's hooks).
type usage struct {
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int
}

// sha256Hex is the lower-case hex sha256 of b.
func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// tokenSeen records the arrival of the first token (for ttft_ms); routes call it on every released token.
func (x *exchange) tokenSeen(now time.Time) {
	if x.firstTok.IsZero() {
		x.firstTok = now
	}
}

// newReceipt builds the receipt of an answer whose text, as the client receives it, is answer.
func (s *Server) newReceipt(x *exchange, u usage, answer []byte, now time.Time) Receipt {
	r := Receipt{
		Version:          s.opt.Version,
		Engine:           s.engineName(),
		Match:            s.opt.Match,
		ModelSHA256:      s.m.SHA256,
		Guard:            string(s.m.Guard.Verdict),
		Pinned:           s.m.Pin.Pinned,
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		CachedTokens:     u.CachedTokens,
		WallMS:           ms(now.Sub(x.received)),
		RequestSHA256:    sha256Hex(x.body),
		ResponseSHA256:   sha256Hex(answer),
	}
	if !x.firstTok.IsZero() {
		t := ms(x.firstTok.Sub(x.received))
		r.TTFTMS = &t
	}
	return r
}

// engineName is the receipt's engine field.
func (s *Server) engineName() string {
	return fmt.Sprintf("bankml %s: its own forward pass, token-identical to llama.cpp (reference @node-llama-cpp/linux-x64@3.22.1, %s) on its oracle tests", s.opt.Version, s.opt.Match)
}

// ms converts a duration to milliseconds.
func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// finish completes an exchange: it builds the receipt for answer, appends the exchange to the ledger when the
// server keeps one (the line is on disk before finish returns), publishes the line's commitment to the
// transparency log when there is one (the leaf is sequenced and integrated before finish returns), signs the
// receipt when there is a key, and counts the answer in the metrics. Without a log the receipt names the
// history entry as its ledger_index; with one it names the leaf (ledger_index, entry_sha256, log_origin).
// An error means the ledger or the log could not record the exchange: the route must answer an error
// instead of the receipt (a 500 before a non-streamed answer, an error event in a stream) so that no answer
// is sent that the history lacks; the model file is re-checked first (503).
func (s *Server) finish(x *exchange, u usage, answer []byte) (Receipt, error) {
	// The model file is checked again before the answer is completed: a file changed while the answer was
	// generated gets a 503 (or an error event in a stream), no receipt and no history entry.
	if err := s.recheck(); err != nil {
		return Receipt{}, err
	}
	now := time.Now()
	rc := s.newReceipt(x, u, answer, now)
	if s.opt.Ledger != nil {
		// The line keeps the receipt as it is before the log's fields and the signature exist.
		app, err := s.opt.Ledger.AppendFunc(func(index uint64) (ledger.Exchange, error) {
			if s.opt.TLog == nil {
				rc.LedgerIndex = &index
			}
			b, err := json.Marshal(rc)
			if err != nil {
				return ledger.Exchange{}, err
			}
			return ledger.Exchange{Request: x.body, Answer: answer, Receipt: b, Received: x.received, Answered: now}, nil
		})
		if err != nil {
			rc.LedgerIndex = nil
			return rc, &APIError{Type: TypeServer, Message: fmt.Sprintf("the history ledger could not record the answer: %v", err)}
		}
		if s.opt.TLog != nil {
			leaf, err := s.opt.Ledger.Publish(s.stop, s.opt.TLog, app)
			if err != nil {
				s.log.Error("transparency log: the answer's entry was not published (it is in the history; the next start adds it)", "entry", app.Index, "err", err)
				return rc, &APIError{Type: TypeServer, Message: fmt.Sprintf("the transparency log could not record the answer: %v", err)}
			}
			rc.LedgerIndex, rc.EntrySHA256, rc.LogOrigin = &leaf, hex.EncodeToString(app.Commitment[:]), s.opt.TLog.Origin()
		}
	}
	if err := s.sign(&rc); err != nil {
		return rc, &APIError{Type: TypeServer, Message: fmt.Sprintf("signing the receipt: %v", err)}
	}
	return rc, nil
}

// sign signs rc with the operator key, when the server has one: signed, key_name and key_id are set, then
// the signature over the RFC 8785 form of the whole receipt (provenance.Signer.SignReceipt).
func (s *Server) sign(rc *Receipt) error {
	if s.opt.Signer == nil {
		return nil
	}
	rc.Signed, rc.KeyName, rc.KeyID, rc.Signature = true, s.opt.Signer.Name(), s.opt.Signer.KeyID(), ""
	b, err := json.Marshal(rc)
	if err != nil {
		return err
	}
	rc.Signature, err = s.opt.Signer.SignReceipt(b)
	return err
}
