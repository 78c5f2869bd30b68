//go:build linux

package ledger

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bankml/bankml/internal/mariadbtest"
)

// TestMySQLLogSharedByTwoAppendersSurvivesADatabaseCrash: two Logs (two replicas' worth) append to one
// MariaDB database while the database is killed with SIGKILL and restarted; every Add returns, each
// commitment is in the log exactly once at the index Add returned, and the log audits (signature, root,
// no leaf twice) through tessera's MySQL storage.
func TestMySQLLogSharedByTwoAppendersSurvivesADatabaseCrash(t *testing.T) {
	db := mariadbtest.Start(t, "bankml")
	ctx := context.Background()
	s, v := testKey(t, "bankml.test/mysql")
	var retries atomic.Int64
	o := LogOptions{CheckpointInterval: time.Second, BatchMaxAge: 5 * time.Millisecond, RetryFor: time.Minute,
		Log: slog.New(countHandler{&retries})}
	var logs []*Log
	for range 2 {
		g, err := OpenMySQLLog(db.DSN(), s, v, o)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close(ctx)
		logs = append(logs, g)
	}
	const workers, each = 8, 30
	var mu sync.Mutex
	at := map[Hash]uint64{}
	var done atomic.Int64
	crashed := make(chan struct{})
	go func() {
		for done.Load() < workers*each/3 {
			time.Sleep(5 * time.Millisecond)
		}
		db.Kill()
		time.Sleep(700 * time.Millisecond)
		db.Start()
		close(crashed)
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				c := Hash(sha256.Sum256(fmt.Appendf(nil, "worker %d entry %d", w, i)))
				idx, err := logs[(w+i)%2].Add(ctx, c)
				if err != nil {
					t.Errorf("worker %d entry %d: %v", w, i, err)
					return
				}
				mu.Lock()
				at[c] = idx
				mu.Unlock()
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	<-crashed
	cp := waitCheckpoint(t, logs[0], workers*each)
	f, closeF, err := OpenLogFetcher("mysql:" + db.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer closeF()
	audit, err := AuditLog(ctx, f, v, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for c, idx := range at {
		if got, ok := audit.Leaves[c]; ok && got == idx {
			found++
		} else {
			t.Errorf("commitment %x: Add said leaf %d, the log has it at %d (%v)", c[:4], idx, got, ok)
		}
	}
	if uint64(len(at)) != audit.Checkpoint.Size || cp.Size != audit.Checkpoint.Size {
		t.Errorf("%d adds returned, the log holds %d leaves (no leaf twice, none lost)", len(at), audit.Checkpoint.Size)
	}
	if retries.Load() == 0 {
		t.Error("no append failed while the database was down: the crash did not meet an append in flight")
	}
	t.Logf("two appenders, database killed and restarted: %d of %d adds in the log exactly once, at the index returned (%d failed appends looked up and retried)", found, workers*each, retries.Load())
}

// countHandler counts the warnings logged (Log.Add's "append failed").
type countHandler struct{ n *atomic.Int64 }

func (h countHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h countHandler) Handle(context.Context, slog.Record) error    { h.n.Add(1); return nil }
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h countHandler) WithGroup(string) slog.Handler                { return h }

// BenchmarkLogAppend measures appends per second through tessera with the default batching (a batch is
// sequenced after DefaultBatchMaxAge or DefaultBatchMaxSize entries), for 1 and 64 concurrent appenders
// each waiting for its index (b.N appends in all): the POSIX log (files, fsynced by tessera), the MariaDB
// log (InnoDB, one transaction per batch), and the whole path of an answer with the POSIX log (the history
// line written and fsynced, then its commitment published). The appends/s metric leaves out the log's
// shutdown (a last checkpoint), which ns/op would count.
func BenchmarkLogAppend(b *testing.B) {
	ctx := context.Background()
	s, v := testKey(b, "bankml.bench/log")
	o := LogOptions{CheckpointInterval: time.Second}
	commit := func(i int64) Hash { return sha256.Sum256(fmt.Appendf(nil, "%d %d", time.Now().UnixNano(), i)) }
	run := func(b *testing.B, parallel int, add func(i int64) error) {
		var n atomic.Int64
		b.SetParallelism(max(1, parallel/runtime.GOMAXPROCS(0)))
		b.ResetTimer()
		start := time.Now()
		if parallel == 1 {
			for i := range b.N {
				if err := add(int64(i)); err != nil {
					b.Fatal(err)
				}
			}
		} else {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := add(n.Add(1)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "appends/s")
	}
	for _, parallel := range []int{1, 64} {
		b.Run(fmt.Sprintf("posix/appenders=%d", parallel), func(b *testing.B) {
			g, err := OpenPOSIXLog(b.TempDir(), s, v, o)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close(ctx)
			run(b, parallel, func(i int64) error { _, err := g.Add(ctx, commit(i)); return err })
		})
		b.Run(fmt.Sprintf("mariadb/appenders=%d", parallel), func(b *testing.B) {
			db := mariadbtest.Start(b, "bench")
			g, err := OpenMySQLLog(db.DSN(), s, v, o)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close(ctx)
			run(b, parallel, func(i int64) error { _, err := g.Add(ctx, commit(i)); return err })
		})
		b.Run(fmt.Sprintf("history+posix/appenders=%d", parallel), func(b *testing.B) {
			dir := b.TempDir()
			l, _, err := Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			g, err := OpenPOSIXLog(filepath.Join(dir, "log"), s, v, o)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close(ctx)
			run(b, parallel, func(i int64) error {
				a, err := l.Append(testExchange(int(i)))
				if err == nil {
					_, err = l.Publish(ctx, g, a)
				}
				return err
			})
		})
	}
}
