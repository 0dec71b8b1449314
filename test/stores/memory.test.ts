import { memoryStore } from '../../src/stores/memory.js';
import { describeStoreContract } from './contract.js';

describeStoreContract('memoryStore', async () => ({
  store: memoryStore(),
  cleanup: async () => {},
}));
