"""What people read: the plan table and the fleet summary."""
