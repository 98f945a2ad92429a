-- Webhook secrets per scope, and per endpoint where an app wants (issue 48).
-- No secret is kept here: a signing secret is derived by the worker from
-- the operator's master key (BOXCAR_WEBHOOK_SECRET), the scope, the
-- endpoint and the generation (worker/webhook/webhook_derive.h).  This
-- table records which generations exist and until when each is valid; the
-- functions are in sql/62_webhook_secrets.sql.
create table boxcar.webhook_secret_generations (
    -- boxcar.queue_scope() of the jobs' queues.
    scope       text not null check (scope ~ '^[A-Za-z0-9_.-]+$' and scope !~ '^\.\.?$'
                                     and length(scope) <= 128),
    -- '' is the scope-wide secret; otherwise the delivery URL, byte for
    -- byte, whose deliveries get secrets of their own.
    endpoint    text not null default ''
                check (endpoint = '' or (endpoint ~ '^https?://[^[:space:]]+$'
                                         and length(endpoint) <= 2048)),
    -- 1, 2, ... per (scope, endpoint).  An endpoint's generation 0 stands
    -- for the scope-wide secrets, kept signing that endpoint's deliveries
    -- for the overlap after its first rotation (its receiver held them).
    generation  integer not null check (generation >= 0),
    created_at  timestamptz not null default now(),
    -- null: valid; otherwise valid while now() < valid_until.
    valid_until timestamptz,
    primary key (scope, endpoint, generation)
);
