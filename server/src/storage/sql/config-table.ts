import type { ConfigStorage, StoredConfig } from '../adapter.ts';
import { CONFIG_TABLE, SqlStorePart } from './store-part.ts';

/** The app's stored config parameters: one row of JSON texts. */
export class SqlConfigTable extends SqlStorePart implements ConfigStorage {
  async getConfig(): Promise<StoredConfig> {
    const row = await this.driver.get(
      `SELECT ${this.q('params')}, ${this.q('masterKeyOnly')} FROM ${this.q(CONFIG_TABLE)} WHERE ${this.q('id')} = 1`,
      [],
    );
    if (!row) return { params: {}, masterKeyOnly: {} };
    return {
      params: JSON.parse(row.params as string),
      masterKeyOnly: JSON.parse(row.masterKeyOnly as string),
    };
  }

  async setConfig(config: StoredConfig): Promise<void> {
    const p = this.params();
    await this.driver.run(
      `INSERT INTO ${this.q(CONFIG_TABLE)} (${this.q('id')}, ${this.q('params')}, ${this.q('masterKeyOnly')}) VALUES (1, ${p.add(JSON.stringify(config.params))}, ${p.add(JSON.stringify(config.masterKeyOnly))}) ` +
        `ON CONFLICT (${this.q('id')}) DO UPDATE SET ${this.q('params')} = excluded.${this.q('params')}, ${this.q('masterKeyOnly')} = excluded.${this.q('masterKeyOnly')}`,
      p.values,
    );
  }
}
