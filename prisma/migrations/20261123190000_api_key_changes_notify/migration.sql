-- Gateways cache verified API keys in memory and LISTEN on "api_key_changes" (see
-- apps/gateway/src/auth/api-key-changes.listener.ts). Every change that could alter what a key
-- stands for is announced with the key's hash (never its secret), so every replica drops the
-- key before its next request: revoked or otherwise updated, deleted (an entity's deletion
-- cascades here), or its entity renamed. last_used_at alone is not announced: gateways write it
-- as keys are used, and it changes nothing a cached key stands for. TRUNCATE, which fires no
-- row trigger, announces "*": drop every cached key.

CREATE FUNCTION "api_key_changes_notify_row"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('api_key_changes', OLD."hash");
    RETURN NULL;
END;
$$;

CREATE FUNCTION "api_key_changes_notify_all"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('api_key_changes', '*');
    RETURN NULL;
END;
$$;

CREATE FUNCTION "api_key_changes_notify_entity"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('api_key_changes', k."hash") FROM "api_keys" k WHERE k."entity_id" IN (OLD."id", NEW."id");
    RETURN NULL;
END;
$$;

CREATE TRIGGER "api_keys_changes_notify_update"
AFTER UPDATE ON "api_keys"
FOR EACH ROW
WHEN ((to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at'))
EXECUTE FUNCTION "api_key_changes_notify_row"();

CREATE TRIGGER "api_keys_changes_notify_delete"
AFTER DELETE ON "api_keys"
FOR EACH ROW
EXECUTE FUNCTION "api_key_changes_notify_row"();

CREATE TRIGGER "api_keys_changes_notify_truncate"
AFTER TRUNCATE ON "api_keys"
FOR EACH STATEMENT
EXECUTE FUNCTION "api_key_changes_notify_all"();

CREATE TRIGGER "entities_api_key_changes_notify_rename"
AFTER UPDATE OF "name" ON "entities"
FOR EACH ROW
WHEN (OLD."name" IS DISTINCT FROM NEW."name")
EXECUTE FUNCTION "api_key_changes_notify_entity"();
