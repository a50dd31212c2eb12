function() {
  return ;;(
}
