import { main } from './cli.ts';
import { seedDemoData } from './demo.ts';

/**
 * `npm start`: the service on the embedded store with a small demo data set. (The console and its
 * backend-for-frontend join this command when they exist.)
 */
const service = await main(process.argv.slice(2));
if (await seedDemoData(service)) console.log('[bds] demo data written: classes Author and Post');
const base = `http://localhost:${process.env.PORT ?? service.options.port}${service.options.mountPath}`;
console.log(`[bds] try: curl -H "X-Backend-Application-Id: ${service.options.appId}" \\`);
console.log(`            -H "X-Backend-REST-API-Key: <REST API key above>" "${base}/classes/Post?limit=3"`);
