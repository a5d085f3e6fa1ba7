/** The saved filters of a class (kept by the bff): the list, and saving, deleting and sharing one. */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { SavedFilter, Where } from '../../../lib/filter.ts';
import { toast } from '../../../lib/toast.ts';
import { dataApi } from '../api/bff.ts';
import { dataBrowserKeys } from '../api/query-keys.ts';

export function useSavedFilters(appId: string, cls: string) {
  const qc = useQueryClient();
  const savedKey = dataBrowserKeys.savedFilters(appId, cls);
  const saved = useQuery({
    queryKey: savedKey,
    queryFn: ({ signal }) => dataApi.savedFilters(appId, cls, signal),
    staleTime: 30_000,
  });
  return {
    saved: saved.data?.results ?? [],
    async save(name: string, where: Where) {
      try {
        await dataApi.saveFilter(appId, cls, name, where);
        toast.success(`Saved filter ${name}`);
        await qc.invalidateQueries({ queryKey: savedKey });
      } catch (err) {
        toast.error(err, 'Saving the filter refused');
      }
    },
    async remove(filter: SavedFilter) {
      try {
        await dataApi.deleteFilter(appId, cls, filter.id);
        await qc.invalidateQueries({ queryKey: savedKey });
      } catch (err) {
        toast.error(err, 'Deleting the filter refused');
      }
    },
    async share(filter: SavedFilter, shared: boolean) {
      try {
        await dataApi.shareFilter(appId, cls, filter.id, shared);
        toast.success(shared ? `Shared filter ${filter.name}` : `Filter ${filter.name} is yours only`);
        await qc.invalidateQueries({ queryKey: savedKey });
      } catch (err) {
        toast.error(err, 'Sharing the filter refused');
      }
    },
  };
}
