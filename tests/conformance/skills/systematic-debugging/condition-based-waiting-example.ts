export const waitFor = async () => true;
