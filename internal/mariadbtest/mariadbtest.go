// Package mariadbtest runs a private MariaDB server for tests: its own data directory under the test's
// temporary folder, its own loopback port, no system service (scripts/install-mariadb.sh installs the
// Debian package that provides mariadbd and mariadb-install-db).
//
// # Design record
//
// What. Start initialises a data directory with mariadb-install-db and runs mariadbd on it, listening
// on 127.0.0.1 on a free port with grant tables skipped (no users, no passwords: the server is reachable
// from this machine only and lives as long as the test), and creates one database. Kill sends SIGKILL
// (a crash: no shutdown, InnoDB recovers at the next start) and Start runs it again on the same
// directory and port. The test's cleanup kills the server and the folder goes with t.TempDir.
//
// Follows. MariaDB's documented options (--no-defaults, --datadir, --port, --bind-address, --socket,
// --skip-grant-tables, --user). The DSN is the Go MySQL driver's (go-sql-driver/mysql).
//
// Deliberate differences. None: this is test scaffolding; a missing MariaDB skips the test
// (testdata.Absent: a failure under CI).
package mariadbtest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the driver tessera's MySQL storage uses

	"github.com/bankml/bankml/internal/testdata"
)

// Server is a private mariadbd.
type Server struct {
	t        testing.TB
	bin, dir string
	port     int
	DB       string // the database Start created

	mu  sync.Mutex
	cmd *exec.Cmd
	out *bytes.Buffer
}

// find returns the path of a MariaDB program: on PATH or in /usr/sbin (Debian's place for mariadbd).
func find(name string) (string, bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	p := filepath.Join("/usr/sbin", name)
	if _, err := os.Stat(p); err == nil {
		return p, true
	}
	return "", false
}

// Start initialises a data directory, runs mariadbd and creates database db. It skips the test (fails
// under CI) when MariaDB is not installed.
func Start(t testing.TB, db string) *Server {
	t.Helper()
	bin, ok := find("mariadbd")
	install, ok2 := find("mariadb-install-db")
	if !ok || !ok2 {
		testdata.Absent(t, "MariaDB is not installed (scripts/install-mariadb.sh installs mariadb-server)")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	args := []string{"--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal", "--skip-test-db"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if out, err := exec.Command(install, args...).CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &Server{t: t, bin: bin, dir: dir, port: port, DB: db}
	t.Cleanup(func() { s.Kill() })
	s.Start()
	rootDB, err := sql.Open("mysql", s.dsn(""))
	if err != nil {
		t.Fatal(err)
	}
	defer rootDB.Close()
	if _, err := rootDB.Exec("CREATE DATABASE IF NOT EXISTS `" + db + "`"); err != nil {
		t.Fatalf("creating database %s: %v", db, err)
	}
	return s
}

func (s *Server) dsn(db string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", s.port, db)
}

// DSN is the Go MySQL driver's data source name of the database Start created.
func (s *Server) DSN() string { return s.dsn(s.DB) }

// Start runs mariadbd (again, after Kill) and waits until it answers (a minute at most).
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(s.dir, "data"), fmt.Sprintf("--port=%d", s.port),
		"--bind-address=127.0.0.1", "--socket=" + filepath.Join(s.dir, "mysqld.sock"), "--pid-file=" + filepath.Join(s.dir, "mysqld.pid"),
		"--skip-grant-tables", "--innodb-buffer-pool-size=32M", "--log-error=" + filepath.Join(s.dir, "error.log")}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	s.out = &bytes.Buffer{}
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("mariadbd: %v", err)
	}
	db, err := sql.Open("mysql", s.dsn(""))
	if err != nil {
		s.t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "error.log"))
			s.t.Fatalf("mariadbd did not answer in a minute: %v\n%s\n%s", err, s.out, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Kill stops mariadbd with SIGKILL (a crash) and waits for it to exit.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
}
