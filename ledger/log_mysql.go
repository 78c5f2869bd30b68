package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
	tmysql "github.com/transparency-dev/tessera/storage/mysql"
	"golang.org/x/mod/sumdb/note"
)

// mysqlSchema creates the tables tessera's MySQL storage reads and writes (v1.0.4, storage/mysql/mysql.go:
// Tessera's compatibility version 1, the published Checkpoint, the TreeState, the Subtree hash tiles and
// the TiledLeaves entry bundles; one row each for the first three), if they do not exist. The storage
// itself creates none and refuses a database without them.
var mysqlSchema = []string{
	"CREATE TABLE IF NOT EXISTS `Tessera` (`id` TINYINT UNSIGNED NOT NULL, `compatibilityVersion` BIGINT UNSIGNED NOT NULL, PRIMARY KEY (`id`))",
	"INSERT IGNORE INTO `Tessera` (`id`, `compatibilityVersion`) VALUES (0, 1)",
	"CREATE TABLE IF NOT EXISTS `Checkpoint` (`id` TINYINT UNSIGNED NOT NULL, `note` MEDIUMBLOB NOT NULL, `published_at` BIGINT NOT NULL, PRIMARY KEY (`id`))",
	"CREATE TABLE IF NOT EXISTS `TreeState` (`id` TINYINT UNSIGNED NOT NULL, `size` BIGINT UNSIGNED NOT NULL, `root` TINYBLOB NOT NULL, PRIMARY KEY (`id`))",
	"CREATE TABLE IF NOT EXISTS `Subtree` (`level` TINYINT UNSIGNED NOT NULL, `index` BIGINT UNSIGNED NOT NULL, `nodes` MEDIUMBLOB NOT NULL, PRIMARY KEY (`level`, `index`))",
	"CREATE TABLE IF NOT EXISTS `TiledLeaves` (`tile_index` BIGINT UNSIGNED NOT NULL, `size` SMALLINT UNSIGNED NOT NULL, `data` LONGBLOB NOT NULL, PRIMARY KEY (`tile_index`))",
}

// OpenMySQLLog opens the transparency log kept in a MySQL or MariaDB database (tessera's MySQL storage),
// creating its tables when they are missing, and signs checkpoints with signer. dsn is the Go MySQL
// driver's data source name, user:password@tcp(host:port)/database. Several processes (bankml serve
// replicas) may append to one database: tessera serialises their batches with a row lock on the tree
// state, and each publishes checkpoints no more often than CheckpointInterval across all of them.
func OpenMySQLLog(dsn string, signer note.Signer, verifier note.Verifier, o LogOptions) (*Log, error) {
	o.defaults()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: --history-db: %w (want user:password@tcp(host:port)/database)", err)
	}
	if cfg.DBName == "" {
		return nil, fmt.Errorf("ledger: --history-db %s names no database (want user:password@tcp(host:port)/database)", cfg.FormatDSN())
	}
	// A database that does not answer fails an append (which Log.Add then retries) instead of hanging it.
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, q := range mysqlSchema {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			return nil, fmt.Errorf("ledger: creating the log's tables in %s: %w", cfg.DBName, err)
		}
	}
	d, err := tmysql.New(ctx, db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger: the MySQL log in %s: %w", cfg.DBName, err)
	}
	g, err := newLog(d, signer, verifier, o, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	return g, nil
}
