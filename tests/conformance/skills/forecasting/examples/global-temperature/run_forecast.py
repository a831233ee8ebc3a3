print('an example, not a script')
