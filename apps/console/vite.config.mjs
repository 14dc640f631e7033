import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Built into dist/apps/console and served by the gateway under /console. Asset URLs are
// relative to the page's <base href>, which the gateway sets to where it mounts the console
// (behind an API prefix too). `vite` (dev) serves it at /console/ and proxies the API to a
// gateway on :8080 (`npm start`).
export default defineConfig(({ command }) => ({
  base: command === 'build' ? './' : '/console/',
  plugins: [react()],
  // The contracts library is framework-free: the console shares its types and small helpers (servingName).
  resolve: { alias: { '@trainyard/contracts': fileURLToPath(new URL('../../libs/contracts/src/index.ts', import.meta.url)) } },
  build: {
    outDir: '../../dist/apps/console',
    emptyOutDir: true,
    sourcemap: true,
    // One small app: Mantine and recharts make up most of it; splitting buys nothing here.
    chunkSizeWarningLimit: 2048,
  },
  server: {
    proxy: {
      '/v1': 'http://127.0.0.1:8080',
      '/console/api': 'http://127.0.0.1:8080',
    },
  },
}));
