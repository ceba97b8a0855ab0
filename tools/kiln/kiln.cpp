// TEMPORARY
int main() { return 0; }
