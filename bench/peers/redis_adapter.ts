/**
 * node-oidc-provider's adapter contract on Redis, the way its documentation shows a Redis
 * deployment (the project's `example/adapters/redis.js`): one ioredis client; consumable models
 * (codes, refresh tokens, device codes) as a hash `{payload, consumed}` so that `consume` is one
 * HSET; everything else a JSON string; a list per grant of the keys issued under it, for
 * `revokeByGrantId`; TTL on every key. Written for the bench so that the peer's refresh_token
 * runs on Redis like Tessera's does, instead of in its own heap.
 */
import { Redis } from 'ioredis';

type Payload = Record<string, unknown>;

const grantable = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest']);
const consumable = new Set(['AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest']);

/** A class per connection, as `new Provider(…, { adapter })` wants a constructor taking the model name. */
export function redisAdapter(url: string, keyPrefix: string): new (name: string) => object {
  const client = new Redis(url, { keyPrefix, lazyConnect: false });
  const grantKey = (grantId: string): string => `grant:${grantId}`;
  const userCodeKey = (userCode: string): string => `userCode:${userCode}`;
  const uidKey = (uid: string): string => `uid:${uid}`;

  return class RedisAdapter {
    constructor(private readonly name: string) {}

    private key(id: string): string {
      return `${this.name}:${id}`;
    }

    async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
      const key = this.key(id);
      const multi = client.multi();
      if (consumable.has(this.name)) multi.hset(key, { payload: JSON.stringify(payload) });
      else multi.set(key, JSON.stringify(payload));
      if (expiresIn) multi.expire(key, expiresIn);
      if (grantable.has(this.name) && typeof payload.grantId === 'string') {
        const list = grantKey(payload.grantId);
        multi.rpush(list, key);
        // Read outside the transaction, as the documented adapter does: the list lives as long
        // as its longest-lived token.
        const ttl = await client.ttl(list);
        if (expiresIn !== undefined && expiresIn > ttl) multi.expire(list, expiresIn);
      }
      if (typeof payload.userCode === 'string') multi.set(userCodeKey(payload.userCode), id, 'EX', expiresIn ?? 3600);
      if (typeof payload.uid === 'string') multi.set(uidKey(payload.uid), id, 'EX', expiresIn ?? 3600);
      await multi.exec();
    }

    async find(id: string): Promise<Payload | undefined> {
      if (consumable.has(this.name)) {
        const data = await client.hgetall(this.key(id));
        if (data.payload === undefined) return undefined;
        const { payload, consumed } = data;
        return { ...(JSON.parse(payload) as Payload), ...(consumed === undefined ? {} : { consumed: Number(consumed) }) };
      }
      const data = await client.get(this.key(id));
      return data === null ? undefined : (JSON.parse(data) as Payload);
    }

    async findByUid(uid: string): Promise<Payload | undefined> {
      const id = await client.get(uidKey(uid));
      return id === null ? undefined : this.find(id);
    }

    async findByUserCode(userCode: string): Promise<Payload | undefined> {
      const id = await client.get(userCodeKey(userCode));
      return id === null ? undefined : this.find(id);
    }

    async consume(id: string): Promise<void> {
      await client.hset(this.key(id), 'consumed', Math.floor(Date.now() / 1000));
    }

    async destroy(id: string): Promise<void> {
      await client.del(this.key(id));
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      const list = grantKey(grantId);
      const keys = await client.lrange(list, 0, -1);
      const multi = client.multi();
      // The list holds keys as written, before ioredis adds the prefix again.
      for (const key of keys) multi.del(key);
      multi.del(list);
      await multi.exec();
    }
  };
}
