-- Job secrets (issue 48): spec.secrets values are sealed with the workers'
-- public key before a row is stored (sql/12_secrets.sql), so no plaintext
-- secret sits in a table, the WAL or a dump.  pgcrypto seals them; it is a
-- trusted extension (PostgreSQL 13+): the database's owner may create it.
-- In a schema of its own, whatever the search_path: its forty functions
-- are not boxcar's API (nor in the roles' list of it); where it was there
-- already (in public, say) the functions that use it find it there too.
create schema if not exists boxcar_pgcrypto;
create extension if not exists pgcrypto with schema boxcar_pgcrypto;

-- The workers' public keys, in OpenPGP form (a Public-Key and a
-- Public-Subkey packet: worker/secrets/pgp_pubkey.h).  The newest active
-- key seals; a retired key seals nothing and is refused in a sealed value.
create table if not exists boxcar.secret_keys (
    key_id     text primary key check (key_id ~ '^[0-9a-f]{16}$'),
    public_key bytea not null check (octet_length(public_key) <= 8192),
    state      text not null default 'active' check (state in ('active', 'retired')),
    created_at timestamptz not null default now(),
    retired_at timestamptz
);
