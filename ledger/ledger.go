package ledger

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gofrs/flock"
)

// File names inside a ledger folder.
const (
	FileName = "history.jsonl" // the ledger: one JSON line per exchange
	LockName = "history.lock"  // held (flock) by the one process appending
)

// ErrLocked is wrapped by Open's error when another process (or another
// Ledger in this one) holds the folder's lock.
var ErrLocked = errors.New("ledger: in use by another process")

// ErrCorrupt is wrapped by the error for a ledger whose committed lines do
// not read back: a line that is not an entry, an index out of sequence, a
// prev_root that does not match the entries before it.
var ErrCorrupt = errors.New("ledger: corrupt")

// ErrBehindLog is wrapped by the error for a history that lacks entries its transparency log committed:
// history.leaves records an entry past the history's end, or the log (one history's own, a POSIX log)
// holds more leaves than the history has entries, or a leaf that is no entry of it. The history was cut
// or restored from an older copy; appending to it would give a new exchange the index of a committed one.
var ErrBehindLog = errors.New("ledger: the history lacks entries its transparency log committed")

// ErrNoEntry is wrapped by the error for a proof of an entry the ledger does
// not have.
var ErrNoEntry = errors.New("ledger: no such entry")

// Exchange is one request and its answer, as the server records it.
type Exchange struct {
	Request  []byte          // the request body exactly as received
	Answer   []byte          // the answer text exactly as the client received it
	Receipt  json.RawMessage // the receipt object sent with the answer (JSON; nil for none)
	Received time.Time       // when the request arrived
	Answered time.Time       // when the answer was complete
}

// Entry is a committed exchange: its position, the root of the tree of the
// entries before it, the time it was appended and its line in the file.
type Entry struct {
	Index    uint64
	PrevRoot Hash
	Appended time.Time
	Exchange
	Line       []byte // the JSON line without its newline: the leaf data
	Commitment Hash   // sha256 of Line: the entry's leaf in the transparency log (Log)
}

// line is the JSON layout of an entry. Request and answer are JSON strings
// when they are valid UTF-8 (so the line stays readable) and base64
// otherwise, so that both are kept byte for byte.
type line struct {
	Index         uint64          `json:"index"`
	PrevRoot      string          `json:"prev_root"`
	Received      time.Time       `json:"received"`
	Answered      time.Time       `json:"answered"`
	Appended      time.Time       `json:"appended"`
	Request       *string         `json:"request,omitempty"`
	RequestBase64 []byte          `json:"request_base64,omitempty"`
	Answer        *string         `json:"answer,omitempty"`
	AnswerBase64  []byte          `json:"answer_base64,omitempty"`
	Receipt       json.RawMessage `json:"receipt"`
}

func textOrBase64(b []byte) (*string, []byte) {
	if utf8.Valid(b) {
		s := string(b)
		return &s, nil
	}
	return nil, b
}

// encodeLine returns the entry's line with its trailing newline.
func encodeLine(index uint64, prev Hash, appended time.Time, ex Exchange) ([]byte, error) {
	l := line{Index: index, PrevRoot: hex.EncodeToString(prev[:]), Received: ex.Received.UTC(),
		Answered: ex.Answered.UTC(), Appended: appended.UTC(), Receipt: ex.Receipt}
	l.Request, l.RequestBase64 = textOrBase64(ex.Request)
	l.Answer, l.AnswerBase64 = textOrBase64(ex.Answer)
	if l.Receipt == nil {
		l.Receipt = json.RawMessage("null")
	} else if !json.Valid(l.Receipt) {
		return nil, errors.New("ledger: the receipt is not valid JSON")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&l); err != nil { // Encode ends the line with '\n'
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return buf.Bytes(), nil
}

// decodeLine parses one line (without its newline).
func decodeLine(b []byte) (Entry, error) {
	var l line
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Entry{}, err
	}
	if dec.More() {
		return Entry{}, errors.New("trailing data after the entry")
	}
	e := Entry{Index: l.Index, Appended: l.Appended, Line: b,
		Exchange: Exchange{Receipt: l.Receipt, Received: l.Received, Answered: l.Answered}}
	pr, err := hex.DecodeString(l.PrevRoot)
	if err != nil || len(pr) != len(e.PrevRoot) {
		return Entry{}, fmt.Errorf("prev_root %q is not a hex SHA-256", l.PrevRoot)
	}
	copy(e.PrevRoot[:], pr)
	switch {
	case l.Request != nil && l.RequestBase64 == nil:
		e.Request = []byte(*l.Request)
	case l.Request == nil && l.RequestBase64 != nil:
		e.Request = l.RequestBase64
	default:
		return Entry{}, errors.New("want exactly one of request and request_base64")
	}
	switch {
	case l.Answer != nil && l.AnswerBase64 == nil:
		e.Answer = []byte(*l.Answer)
	case l.Answer == nil && l.AnswerBase64 != nil:
		e.Answer = l.AnswerBase64
	default:
		return Entry{}, errors.New("want exactly one of answer and answer_base64")
	}
	if string(e.Receipt) == "null" {
		e.Receipt = nil
	}
	return e, nil
}

// Head is the state of the ledger anyone can compare: the number of entries,
// the RFC 6962 root over their lines, the file's size in bytes and its
// CIDv1 (raw, sha2-256, base32), the content address of the whole file.
type Head struct {
	Size  uint64 `json:"size"`
	Root  string `json:"root"` // hex
	Bytes int64  `json:"bytes"`
	CID   string `json:"cid"`
}

// state is what reading a ledger file yields.
type state struct {
	leaves  []Hash
	commits []Hash  // sha256 of each line (the transparency log's leaf data)
	offsets []int64 // start of each line
	front   frontier
	digest  hash.Hash // sha256 of the committed bytes
	size    int64     // committed bytes
	torn    int64     // bytes after the last newline
}

func (s *state) head() Head {
	r := s.front.root()
	var d Hash
	s.digest.Sum(d[:0])
	return Head{Size: uint64(len(s.leaves)), Root: hex.EncodeToString(r[:]), Bytes: s.size, CID: CIDFromDigest(d)}
}

// scan reads a ledger file: every newline-terminated line must be the next
// entry (index in sequence, prev_root the root of the entries before it);
// bytes after the last newline are a torn write, counted in torn and not
// read. visit, if not nil, sees every entry.
func scan(r io.Reader, visit func(Entry) error) (*state, error) {
	s := &state{digest: sha256.New()}
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		b, err := br.ReadBytes('\n')
		if err == io.EOF {
			s.torn = int64(len(b))
			return s, nil
		}
		if err != nil {
			return nil, fmt.Errorf("ledger: reading: %w", err)
		}
		data := b[:len(b)-1]
		e, derr := decodeLine(data)
		n := uint64(len(s.leaves))
		switch {
		case derr != nil:
			return nil, fmt.Errorf("%w: entry %d (byte %d): %v", ErrCorrupt, n, s.size, derr)
		case e.Index != n:
			return nil, fmt.Errorf("%w: entry %d (byte %d) says index %d", ErrCorrupt, n, s.size, e.Index)
		case e.PrevRoot != s.front.root():
			return nil, fmt.Errorf("%w: entry %d (byte %d): prev_root %x is not the root of the %d entries before it",
				ErrCorrupt, n, s.size, e.PrevRoot[:], n)
		}
		commit := Hash(sha256.Sum256(data))
		if visit != nil {
			e.Line = append([]byte(nil), data...)
			e.Commitment = commit
			if err := visit(e); err != nil {
				return nil, err
			}
		}
		leaf := LeafHash(data)
		s.leaves = append(s.leaves, leaf)
		s.commits = append(s.commits, commit)
		s.offsets = append(s.offsets, s.size)
		s.front.push(leaf)
		s.digest.Write(b)
		s.size += int64(len(b))
	}
}

// Report is what Verify finds.
type Report struct {
	Head
	TornBytes int64 `json:"torn_bytes"` // bytes of a partial last line (a write in progress or cut short)
}

// Verify reads the ledger in dir without locking it (a running server may be
// appending) and checks every committed line: each is an entry, indices run
// 0, 1, 2, ..., and each entry's prev_root is the RFC 6962 root of the entries
// before it, so that a changed, inserted or removed line shows (all but the
// last line, which no later line commits to: compare the head with one
// published earlier for that, as bankml ledger verify --root does). It returns
// the head of the committed entries. Errors wrap ErrCorrupt, or are I/O
// errors (a missing ledger among them).
func Verify(dir string) (Report, error) { return VerifyEntries(dir, nil) }

// VerifyEntries is Verify calling visit (when not nil) for every committed
// entry in order, after checking it, in the same single read of the file;
// visit's error stops the walk and is returned.
func VerifyEntries(dir string, visit func(Entry) error) (Report, error) {
	f, err := os.Open(filepath.Join(dir, FileName))
	if err != nil {
		return Report{}, fmt.Errorf("ledger: %w", err)
	}
	defer f.Close()
	s, err := scan(f, visit)
	if err != nil {
		return Report{}, err
	}
	return Report{Head: s.head(), TornBytes: s.torn}, nil
}

// Ledger is an open ledger folder that this process appends to. It holds the
// folder's lock until Close. Its methods are safe for concurrent use;
// appends are serialised.
type Ledger struct {
	dir  string
	lock *flock.Flock

	mu      sync.Mutex
	f       *os.File
	s       *state
	li      *leafIndex // entries' leaf indices in the transparency log (history.leaves)
	partial int64      // bytes of a partial last line kept for Reconcile to cut (OpenOptions.KeepPartial)
}

// Opened says what Open found.
type Opened struct {
	Head
	// TrimmedBytes is the size of the partial last line that Open cut off: a
	// write that a crash (kill -9, power loss) interrupted. Its exchange was
	// never committed (Append had not returned).
	TrimmedBytes int64
	// PartialBytes is the size of a partial last line left in place (OpenOptions.KeepPartial) for
	// Reconcile to cut once the transparency log shows it did not commit it.
	PartialBytes int64
}

// OpenOptions configure OpenWith.
type OpenOptions struct {
	// KeepPartial leaves a partial last line in place instead of cutting it off: the caller keeps a
	// transparency log, and only Reconcile, having checked that the log is not ahead of the history (a
	// history cut short after its last line was committed also ends in a partial line), cuts it. A
	// history.leaves record past the history's end is then refused by Reconcile, which names the log's
	// size, instead of by Open. Append fails until Reconcile.
	KeepPartial bool
}

// Open opens (creating it if needed) the ledger in dir for appending: it
// takes the folder's lock (ErrLocked when another process holds it), reads
// and checks every committed line as Verify does (ErrCorrupt), and cuts off a
// partial last line left by a crash, reporting its size in Opened (the
// caller should say so). A history.leaves that records an entry past the
// history's end (ErrBehindLog: the history was cut after the log committed
// its lines) is refused before anything is cut. The lock is released by
// Close, or by the operating system when the process dies.
func Open(dir string) (*Ledger, Opened, error) { return OpenWith(dir, OpenOptions{}) }

// OpenWith is Open with options (a partial last line kept for Reconcile).
func OpenWith(dir string, o OpenOptions) (*Ledger, Opened, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, Opened{}, fmt.Errorf("ledger: %w", err)
	}
	lk := flock.New(filepath.Join(dir, LockName))
	ok, err := lk.TryLock()
	if err != nil {
		return nil, Opened{}, fmt.Errorf("ledger: locking %s: %w", lk.Path(), err)
	}
	if !ok {
		return nil, Opened{}, fmt.Errorf("%w: %s is locked", ErrLocked, lk.Path())
	}
	l, op, err := open(dir, o)
	if err != nil {
		lk.Unlock()
		return nil, Opened{}, err
	}
	l.lock = lk
	return l, op, nil
}

func open(dir string, o OpenOptions) (*Ledger, Opened, error) {
	path := filepath.Join(dir, FileName)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, Opened{}, fmt.Errorf("ledger: %w", err)
	}
	if os.IsNotExist(statErr) {
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, Opened{}, err
		}
	}
	s, err := scan(f, nil)
	if err != nil {
		f.Close()
		return nil, Opened{}, fmt.Errorf("%w (%s)", err, path)
	}
	li, err := openLeafIndex(dir, uint64(len(s.leaves)))
	if err != nil {
		f.Close()
		return nil, Opened{}, err
	}
	fail := func(err error) (*Ledger, Opened, error) {
		f.Close()
		li.close()
		return nil, Opened{}, err
	}
	if li.beyond != nil && !o.KeepPartial { // with KeepPartial Reconcile refuses it, naming the log's size
		return fail(fmt.Errorf("%w: %s has %d entries%s, but %s records entry %d as leaf %d of the log: "+
			"the history was cut or restored from an older copy after the log committed its lines; "+
			"restore %s with all its entries (or keep a new history in another folder): appending to it would give a new exchange a committed entry's index",
			ErrBehindLog, path, len(s.leaves), partialNote(s.torn), LeavesName, li.beyond.Entry, li.beyond.LeafIndex, FileName))
	}
	op := Opened{Head: s.head()}
	var partial int64
	switch {
	case s.torn > 0 && o.KeepPartial:
		partial, op.PartialBytes = s.torn, s.torn
	case s.torn > 0:
		if err := f.Truncate(s.size); err != nil {
			return fail(fmt.Errorf("ledger: cutting off a partial last line: %w", err))
		}
		if err := f.Sync(); err != nil {
			return fail(fmt.Errorf("ledger: %w", err))
		}
		op.TrimmedBytes = s.torn
	}
	if _, err := f.Seek(s.size, io.SeekStart); err != nil {
		return fail(fmt.Errorf("ledger: %w", err))
	}
	return &Ledger{dir: dir, f: f, s: s, li: li, partial: partial}, op, nil
}

// partialNote is " and a partial last line of N bytes" when n > 0.
func partialNote(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" and a partial last line of %d bytes", n)
}

// cutPartial cuts off a partial last line kept at OpenWith; it returns its size. Callers hold l.mu.
func (l *Ledger) cutPartial() (int64, error) {
	n := l.partial
	if n == 0 {
		return 0, nil
	}
	if err := l.f.Truncate(l.s.size); err != nil {
		return 0, fmt.Errorf("ledger: cutting off a partial last line: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return 0, fmt.Errorf("ledger: %w", err)
	}
	l.partial = 0
	return n, nil
}

// syncDir makes a new file's directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("ledger: syncing %s: %w", dir, err)
	}
	return nil
}

// Dir returns the ledger's folder.
func (l *Ledger) Dir() string { return l.dir }

// Appended is what an append committed.
type Appended struct {
	Index      uint64 // the entry's index
	Leaf       Hash   // its leaf hash
	Commitment Hash   // sha256 of its line: its leaf data in the transparency log (Ledger.Publish)
	Head       Head   // the ledger after it
}

// Append commits one exchange: its line is written with a single write and
// fsynced before Append returns, so that a returned entry survives a crash.
// On a write or sync error the file is cut back to the previous entry and
// the error returned (the ledger stays valid; the exchange is not recorded).
func (l *Ledger) Append(ex Exchange) (Appended, error) {
	return l.AppendFunc(func(uint64) (Exchange, error) { return ex, nil })
}

// AppendFunc is Append for an exchange that needs its own index (a receipt
// naming its ledger entry): build is called with the index the entry will
// have, under the append lock; its error aborts the append.
func (l *Ledger) AppendFunc(build func(index uint64) (Exchange, error)) (Appended, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return Appended{}, errors.New("ledger: closed")
	}
	if l.partial > 0 || l.li.beyond != nil {
		return Appended{}, fmt.Errorf("ledger: the history awaits Reconcile (OpenOptions.KeepPartial): a partial last line of %d bytes, or %s past its end", l.partial, LeavesName)
	}
	index := uint64(len(l.s.leaves))
	ex, err := build(index)
	if err != nil {
		return Appended{}, err
	}
	b, err := encodeLine(index, l.s.front.root(), time.Now(), ex)
	if err != nil {
		return Appended{}, err
	}
	if _, err := l.f.Write(b); err != nil {
		return Appended{}, l.rollback(fmt.Errorf("ledger: writing entry %d: %w", index, err))
	}
	if err := l.f.Sync(); err != nil {
		return Appended{}, l.rollback(fmt.Errorf("ledger: syncing entry %d: %w", index, err))
	}
	leaf := LeafHash(b[:len(b)-1])
	commit := Hash(sha256.Sum256(b[:len(b)-1]))
	l.s.leaves = append(l.s.leaves, leaf)
	l.s.commits = append(l.s.commits, commit)
	l.s.offsets = append(l.s.offsets, l.s.size)
	l.s.front.push(leaf)
	l.s.digest.Write(b)
	l.s.size += int64(len(b))
	return Appended{Index: index, Leaf: leaf, Commitment: commit, Head: l.s.head()}, nil
}

// rollback cuts the file back to the last committed entry after a failed
// append.
func (l *Ledger) rollback(err error) error {
	if terr := l.f.Truncate(l.s.size); terr != nil {
		return fmt.Errorf("%w; cutting back to entry %d also failed: %v (the partial line is cut off at the next Open)", err, len(l.s.leaves), terr)
	}
	if _, serr := l.f.Seek(l.s.size, io.SeekStart); serr != nil {
		return fmt.Errorf("%w; %v", err, serr)
	}
	return err
}

// Head returns the ledger's current head.
func (l *Ledger) Head() Head {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.head()
}

// Proof is an inclusion proof of one entry in the tree of the first Size
// entries, with the entry's line so that its leaf hash can be recomputed.
type Proof struct {
	Index    uint64   `json:"index"`
	Size     uint64   `json:"size"`
	LeafHash string   `json:"leaf_hash"` // hex of LeafHash(entry)
	Path     []string `json:"path"`      // hex, RFC 6962 §2.1.1 order (leaf to root)
	Root     string   `json:"root"`      // hex
	Entry    string   `json:"entry"`     // the entry's line, byte for byte (a JSON string, so that re-encoding the proof cannot change it)
}

// Check verifies the proof: the leaf hash is that of the entry's line, and
// the path leads from it to the root as RFC 9162 §2.1.3.2 prescribes. The
// error wraps ErrProof for a proof that does not verify.
func (p *Proof) Check() error {
	leaf, err := decodeHash("leaf_hash", p.LeafHash)
	if err != nil {
		return err
	}
	root, err := decodeHash("root", p.Root)
	if err != nil {
		return err
	}
	if LeafHash([]byte(p.Entry)) != leaf {
		return fmt.Errorf("%w: the entry's leaf hash is not %s", ErrProof, p.LeafHash)
	}
	var path []Hash
	for i, h := range p.Path {
		ph, err := decodeHash(fmt.Sprintf("path[%d]", i), h)
		if err != nil {
			return err
		}
		path = append(path, ph)
	}
	return VerifyInclusion(leaf, p.Index, p.Size, path, root)
}

func decodeHash(name, s string) (Hash, error) {
	var h Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("%w: %s %q is not a hex SHA-256", ErrProof, name, s)
	}
	copy(h[:], b)
	return h, nil
}

// Prove returns the inclusion proof of entry index in the current tree.
// Generating it costs O(size) hashes.
func (l *Ledger) Prove(index uint64) (Proof, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return prove(l.f, l.s, index)
}

func prove(r io.ReaderAt, s *state, index uint64) (Proof, error) {
	n := uint64(len(s.leaves))
	if index >= n {
		return Proof{}, fmt.Errorf("%w: %d (the ledger has %d)", ErrNoEntry, index, n)
	}
	path, err := InclusionPath(s.leaves, index)
	if err != nil {
		return Proof{}, err
	}
	end := s.size
	if index+1 < n {
		end = s.offsets[index+1]
	}
	b := make([]byte, end-s.offsets[index]-1)
	if _, err := r.ReadAt(b, s.offsets[index]); err != nil {
		return Proof{}, fmt.Errorf("ledger: reading entry %d: %w", index, err)
	}
	root := s.front.root()
	p := Proof{Index: index, Size: n, LeafHash: hex.EncodeToString(s.leaves[index][:]), Root: hex.EncodeToString(root[:]), Entry: string(b)}
	for _, h := range path {
		p.Path = append(p.Path, hex.EncodeToString(h[:]))
	}
	return p, nil
}

// ProveFile returns the inclusion proof of entry index in the ledger in dir
// as it is on disk (without locking it), after checking it as Verify does.
func ProveFile(dir string, index uint64) (Proof, error) {
	f, err := os.Open(filepath.Join(dir, FileName))
	if err != nil {
		return Proof{}, fmt.Errorf("ledger: %w", err)
	}
	defer f.Close()
	s, err := scan(f, nil)
	if err != nil {
		return Proof{}, err
	}
	return prove(f, s, index)
}

// Entries calls visit for every committed entry of the ledger in dir, in
// order, after checking each as Verify does; visit's error stops the walk.
func Entries(dir string, visit func(Entry) error) error {
	_, err := VerifyEntries(dir, visit)
	return err
}

// Close closes the file and releases the lock.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := errors.Join(l.f.Close(), l.li.close())
	l.f = nil
	if uerr := l.lock.Unlock(); err == nil {
		err = uerr
	}
	return err
}
