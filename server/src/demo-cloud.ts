import type { CloudDefinitions } from './cloud/index.ts';

/**
 * The demo cloud module `npm start` loads (unless BDS_CLOUD names another): one function, one
 * trigger and one job, so the console's Cloud section shows them from the first start.
 */
export default function demoCloud(cloud: CloudDefinitions): void {
  cloud.define(
    'hello',
    (req) => `Hello ${(req.user?.username as string | undefined) ?? 'stranger'}, from cloud code.`,
  );

  cloud.beforeSave('Post', (req) => {
    const post = req.object!;
    if (post.title === undefined) return;
    if (typeof post.title !== 'string' || post.title.trim() === '') throw new Error('A post needs a title.');
    post.title = post.title.trim();
  });

  cloud.job('countPosts', async (req) => {
    req.message('counting posts');
    const posts = await req.api.asMaster.count('Post');
    req.message(`${posts} posts`);
  });
}
